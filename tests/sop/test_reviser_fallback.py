"""Who revised an SOP is on record: the model's label, or the rules and why the model failed."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

from cli_process import staffroom_process
from reviser_runs import CORRECTION, run_with_reviser

from framework import Event, EventKind, Settings, Staffroom

ADD_COVER = json.dumps(
    {"edits": [{"op": "add", "speaker": "designer", "do": "封面图", "before": 1, "reason": "x"}]}
)
REMOVE_NINE = json.dumps({"edits": [{"op": "remove", "step": 9, "reason": "too long"}]})


class APIConnectionError(Exception):
    """Named like openai's, so the call layer classifies it as a connection failure."""


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def fallbacks(events: list[Event]) -> list[dict[str, str]]:
    return [e.content for e in events if e.kind == EventKind.FALLBACK]


async def test_the_models_edits_are_credited_to_the_model(settings: Settings) -> None:
    run = await run_with_reviser(settings, ADD_COVER)
    draft, events, label = run.draft, run.history, run.label
    assert draft.change_log[-1].by == f"model:{label}"
    assert draft.steps[0].do == "封面图" and fallbacks(events) == []


async def test_an_answer_that_does_not_apply_is_retried_with_the_error(settings: Settings) -> None:
    run = await run_with_reviser(settings, REMOVE_NINE, ADD_COVER)
    draft, events, model, label = run.draft, run.history, run.model, run.label
    assert draft.change_log[-1].by == f"model:{label}" and draft.steps[0].do == "封面图"
    retry = str(model.calls[-1][-1].content)
    assert "the edits do not apply: edit 1 (remove): step 9 is not a step number 1..4" in retry
    assert fallbacks(events) == []


async def test_twice_unusable_falls_back_to_the_rules_and_says_why(settings: Settings) -> None:
    run = await run_with_reviser(settings, "<html>500</html>", REMOVE_NINE)
    draft, events = run.draft, run.history
    reason = (
        "model answer unusable: the edits do not apply: "
        "edit 1 (remove): step 9 is not a step number 1..4"
    )
    assert draft.change_log[-1].by == f"rules ({reason})"
    assert [s.speakers[0] for s in draft.steps] == ["pm", "designer", "engineer", "pm"]
    assert fallbacks(events) == [{"what": "sop_revision", "used": "rules", "reason": reason}]
    shown = staffroom_process("history", "room:rf-1", data=settings.data_dir)
    assert shown.code == 0, shown.err
    assert f"⚠ fallback: sop_revision → rules ({reason})" in shown.out


async def test_a_failed_call_falls_back_too(settings: Settings) -> None:
    settings = settings.model_copy(update={"model_retries": 0})
    run = await run_with_reviser(settings, APIConnectionError("refused"))
    draft, events = run.draft, run.history
    (fallback,) = fallbacks(events)
    assert fallback["reason"].startswith("model call failed: cannot reach")
    assert draft.change_log[-1].by == f"rules ({fallback['reason']})"


async def test_the_simulator_uses_the_rules_without_a_fallback(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("rf-2", "tech-article")
        await drain(room.start())
        await drain(room.post(CORRECTION, author="author"))
        draft = await staff.sops.store.get("tech-article", 2)
        assert draft.change_log[-1].by == "rules" and fallbacks(room.history()) == []


async def test_no_edits_while_people_asked_for_one_is_retried_then_the_rules_stand(
    settings: Settings,
) -> None:
    nothing = json.dumps({"edits": []})
    run = await run_with_reviser(settings, nothing, nothing)
    draft, events, model = run.draft, run.history, run.model
    retry = str(model.calls[-1][-1].content)
    assert "proposes no edits, but the runs' corrections ask for" in retry
    # The person's explicit correction is not lost to a lazy answer.
    assert [s.speakers[0] for s in draft.steps] == ["pm", "designer", "engineer", "pm"]
    (fallback,) = fallbacks(events)
    assert "proposes no edits" in fallback["reason"]
    assert (draft.change_log[-1].by or "").startswith("rules (model answer unusable")
