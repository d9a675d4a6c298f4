"""The model selector answers {"speaker": id}; when it cannot, round robin does, on record."""

from __future__ import annotations

from collections.abc import AsyncIterator

from framework import Event, EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def select_with(settings: Settings, *replies: str) -> tuple[list[Event], ScriptedChatModel]:
    """A room with no SOP and a model selector; one message; its events and the selector."""
    selector = ScriptedChatModel(replies=list(replies))

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return selector if who == "selector" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
        scenario.announcement.sop = None
        scenario.settings.selector = "model"
        room = await staff.room("sel-f", scenario)
        await drain(room.start())
        return await drain(room.post("大家好", author="author")), selector


def reply_of(events: list[Event]) -> Event:
    return next(e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human"))


async def test_the_schema_answer_picks_the_speaker(settings: Settings) -> None:
    events, selector = await select_with(settings, '{"speaker": "designer"}')
    assert reply_of(events).author == "designer" and len(selector.calls) == 1
    assert not [e for e in events if e.kind == EventKind.FALLBACK]
    prompt = str(selector.calls[0][0].content)
    assert '"enum":["pm","engineer","designer"]' in prompt and '{"speaker":"pm"}' in prompt


async def test_a_bare_id_is_read_leniently(settings: Settings) -> None:
    events, selector = await select_with(settings, "engineer")
    assert reply_of(events).author == "engineer" and len(selector.calls) == 1


async def test_an_unknown_id_is_retried_with_the_candidates(settings: Settings) -> None:
    events, selector = await select_with(settings, '{"speaker": "ceo"}', '{"speaker": "engineer"}')
    assert reply_of(events).author == "engineer"
    assert "'ceo' is not one of: pm, engineer, designer" in str(selector.calls[1][-1].content)


async def test_unusable_twice_falls_back_to_round_robin_with_a_fallback_event(
    settings: Settings,
) -> None:
    events, _ = await select_with(settings, "<html><body>500</body></html>", "Я не уверен.")
    reason = "model answer unusable: not JSON ('Я не уверен.')"
    (fallback,) = [e for e in events if e.kind == EventKind.FALLBACK]
    assert fallback.content == {"what": "selector", "used": "round_robin", "reason": reason}
    reply = reply_of(events)
    assert reply.author == "pm" and reply.meta["note"] == f"round robin: {reason}"


async def test_an_id_inside_a_word_is_not_read_as_a_pick(settings: Settings) -> None:
    events, selector = await select_with(
        settings, "Let us discuss the developments.", '{"speaker": "designer"}'
    )
    assert reply_of(events).author == "designer" and len(selector.calls) == 2
