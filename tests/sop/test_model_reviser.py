"""With a real model, the reviser is a prompt; its edits go through the same apply path."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from reviser_runs import run_with_reviser

from framework import Event, EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def run_with_reviser_reply(settings: Settings, *replies: str) -> list[str]:
    run = await run_with_reviser(settings, *replies, room="mr-1")
    revision = next(e for e in run.posted if e.kind == EventKind.REVISION)
    assert revision.content["sop"] == "tech-article@2"
    # The model was shown the steps and the correction.
    prompt = str(run.model.calls[-1][0].content)
    assert "先定配图" in prompt and "2. engineer" in prompt
    return [f"{s.speakers[0]}:{s.do[:4]}" for s in run.draft.steps]


async def test_model_edits_are_applied(settings: Settings) -> None:
    reply = json.dumps(
        {
            "edits": [
                {"op": "add", "speaker": "designer", "do": "封面图", "before": 1, "reason": "x"}
            ]
        }
    )
    steps = await run_with_reviser_reply(settings, reply)
    assert steps[0] == "designer:封面图" and len(steps) == 5


async def test_an_unusable_model_answer_falls_back_to_the_rules(settings: Settings) -> None:
    # Unusable twice (the first answer and the retry): the rules stand in.
    steps = await run_with_reviser_reply(settings, "I think it is fine as is", "Still fine.")
    assert [s.split(":")[0] for s in steps] == ["pm", "designer", "engineer", "pm"]


async def test_a_model_can_correct_the_sop_too(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["提纲已写好。", "纠正: extra 3 配图这一步这次用不上"])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("mc-1", "tech-article")
        await drain(room.start())
        await drain(room.post("继续", author="author"))
        (outcome,) = await staff.sops.store.outcomes("tech-article@1")
        assert [(c.kind, c.step, c.by) for c in outcome.corrections] == [("extra", 3, "pm")]
        assert (await staff.sops.store.metrics("tech-article@1")).corrections == 1
