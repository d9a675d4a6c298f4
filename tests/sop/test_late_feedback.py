"""Feedback after a run closed still counts for that run; a proposal equal to an existing
version re-selects it. Through the public API, on the offline simulator."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

from rich.console import Console

from framework import Event, EventKind, Room, Staffroom
from framework.sessions.events import make_event
from framework.specs.scenario import Scenario
from framework.surfaces.cli.render import render_event

CORRECTION = "纠正: order 3 before 2 先定配图再写正文\n评分: 2/5"


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def closed_run(staff: Staffroom, room_id: str, scenario: str | Scenario) -> Room:
    """A tech-article run the author let finish without a word of correction."""
    room = await staff.room(room_id, scenario)
    events = await drain(room.start())
    assert events[-1].kind == EventKind.WAIT  # the draft step waits for the author
    events = await drain(room.post("方向没问题，继续", author="author"))
    assert any(e.kind == EventKind.FEEDBACK for e in events), "the run closed"
    return room


async def test_a_correction_after_the_close_amends_the_run_and_revises(staff: Staffroom) -> None:
    room = await closed_run(staff, "late-1", "tech-article")
    before = await staff.sops.store.metrics("tech-article@1")
    assert before.runs == 1 and before.corrections == 0 and before.successes == 1

    events = await drain(room.post(CORRECTION, author="author"))
    late = next(e for e in events if e.kind == EventKind.FEEDBACK)
    assert late.content == {
        "sop": "tech-article@1", "success": False, "score": 0.4, "corrections": 1,
        "late": True, "run": late.content["run"],
    }  # fmt: skip
    revision = next(e for e in events if e.kind == EventKind.REVISION)
    assert revision.content["sop"] == "tech-article@2" and revision.content["status"] == "draft"
    # The same run, amended: still one run, now failed and corrected once.
    after = await staff.sops.store.metrics("tech-article@1")
    assert after.runs == 1 and after.corrections == 1 and after.successes == 0
    draft = await staff.sops.store.get("tech-article", 2)
    assert [s.speakers[0] for s in draft.steps] == ["pm", "designer", "engineer", "pm"]

    # Said again (a redelivered message, or the same line twice): nothing more is counted.
    again = await drain(room.post(CORRECTION, author="author"))
    assert not any(e.kind in (EventKind.FEEDBACK, EventKind.REVISION) for e in again)
    assert (await staff.sops.store.metrics("tech-article@1")).corrections == 1


async def test_late_feedback_needs_the_runs_people_and_the_window(staff: Staffroom) -> None:
    room = await closed_run(staff, "late-2", "tech-article")
    # Someone who took no part in the run cannot rewrite its outcome, and is told so.
    events = await drain(room.post(CORRECTION, author="mallory"))
    (notice,) = [e for e in events if e.kind == EventKind.FEEDBACK]
    assert notice.content["counted"] is False and notice.content["by"] == "mallory"
    assert "只有参与了那次运行的人（author）" in notice.content["notice"]
    assert not any(e.kind == EventKind.REVISION for e in events)
    # Talk that is no feedback gets no notice.
    chat = await drain(room.post("谢谢大家", author="mallory"))
    assert not any(e.kind == EventKind.FEEDBACK for e in chat)

    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.settings.sop_feedback_window = 0  # only during the run
    shut = await closed_run(staff, "late-3", scenario)
    events = await drain(shut.post(CORRECTION, author="author"))
    (notice,) = [e for e in events if e.kind == EventKind.FEEDBACK]
    assert notice.content["counted"] is False and "反馈时限（0 秒）" in notice.content["notice"]
    metrics = await staff.sops.store.metrics("tech-article@1")
    assert metrics.runs == 2 and metrics.corrections == 0


async def test_asking_for_an_existing_versions_steps_reselects_it(staff: Staffroom) -> None:
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.settings.sop_auto_publish = True
    scenario.settings.sop_trial_share = 0.0
    room = await closed_run(staff, "back-1", scenario)
    await drain(room.post(CORRECTION, author="author"))  # v2: figures before the draft
    # The author changes their mind on v2: the draft first again, which is v1's order.
    room = await closed_run(staff, "back-2", scenario)
    assert room.history()[0].content["sop"] == "tech-article@2"
    events = await drain(room.post("纠正: order 3 before 2 还是先写正文", author="author"))
    revision = next(e for e in events if e.kind == EventKind.REVISION)
    assert revision.content["sop"] == "tech-article@1" and revision.content["reselected"]
    v2 = await staff.sops.store.get("tech-article", 2)
    assert v2.status == "deprecated" and "再次要求 tech-article@1 的步骤" in v2.change_log[-1].why
    nxt = await staff.room("back-3", scenario)
    assert (await drain(nxt.start()))[0].content["sop"] == "tech-article@1"


async def test_a_rolled_back_version_is_not_proposed_again(staff: Staffroom) -> None:
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.settings.sop_auto_publish = True
    scenario.settings.sop_trial_share = 0.0
    room = await closed_run(staff, "retired-1", scenario)
    await drain(room.post(CORRECTION, author="author"))  # v2 published
    await staff.sops.store.deprecate("tech-article", 2, "did worse in a trial", by="trial")
    # The next run on v1 carries the same request: it does not bring v2 back as v3.
    room = await closed_run(staff, "retired-2", scenario)
    events = await drain(room.post(CORRECTION, author="author"))
    noted = next(e for e in events if e.kind == EventKind.REVISION)
    assert "不再提出：运行要求的是 tech-article@2 的步骤" in noted.content["conflicts"][-1]
    assert [v.version for v in await staff.sops.store.versions("tech-article")] == [1, 2]


def test_the_transcript_shows_why_late_feedback_did_not_count() -> None:
    notice = "mallory: your feedback on tech-article@1 does not count: only the people who …"
    content = {"sop": "tech-article@1", "late": True, "counted": False, "notice": notice}
    out = io.StringIO()
    render_event(
        Console(file=out, width=200), make_event("room:x", EventKind.FEEDBACK, "system", content)
    )
    assert out.getvalue().strip() == f"◆ {notice}"
