"""SOPs in rooms through the public API: best version, feedback, review, extraction, sharing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from framework import Event, EventKind, Settings, Staffroom
from framework.sop.model import Outcome, Status


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def feedback_of(room_events: list[Event]) -> dict[str, object]:
    """The run's feedback and revision events, as ``{"outcome": ..., "revision": ...}``."""
    feedback = next(e for e in room_events if e.kind == EventKind.FEEDBACK)
    revision = next((e for e in room_events if e.kind == EventKind.REVISION), None)
    return {"outcome": feedback.content, "revision": revision and revision.content}


CORRECTION = "纠正: order 3 before 2 先定配图再写正文\n评分: 2/5"


async def test_outcome_feedback_drafts_a_revision_that_runs_once_reviewed(
    staff: Staffroom,
) -> None:
    first = await staff.room("fb-1", "tech-article")
    await drain(first.start())
    events = await drain(first.post(CORRECTION, author="author"))
    feedback = feedback_of(events)
    assert feedback["outcome"] == {
        "sop": "tech-article@1",
        "success": False,
        "score": 0.4,
        "corrections": 1,
        "off_sop_turns": 0,
        "human_interventions": 1,
        "duration_s": feedback["outcome"]["duration_s"],  # type: ignore[index]
        "failures": [],  # the simulator wrote every declared product
        # What feedback after the close needs: the stored outcome's key and who may amend it.
        "at": feedback["outcome"]["at"],  # type: ignore[index]
        "reason": "sop_complete",
        "people": ["author"],
    }
    revision = feedback["revision"]
    assert revision["sop"] == "tech-article@2" and revision["status"] == "draft"  # type: ignore[index]
    draft = await staff.sops.store.get("tech-article", 2)
    assert [s.speakers[0] for s in draft.steps] == ["pm", "designer", "engineer", "pm"]
    assert "先定配图再写正文" in draft.change_log[-1].why
    assert draft.change_log[-1].source == "room:fb-1"

    # A draft is not used until reviewed: the next room still runs on v1.
    second = await staff.room("fb-2", "tech-article")
    assert (await drain(second.start()))[0].content["sop"] == "tech-article@1"
    await staff.sops.store.approve("tech-article", 2, "author")
    await staff.sops.store.approve("tech-article", 2, "team-lead")
    published = await staff.sops.store.publish(
        "tech-article", 2, required_reviewers=["author", "team-lead"]
    )
    assert published.status == Status.PUBLISHED
    # Published over v1, v2 runs as a trial in half the new rooms (by a hash of the room):
    # room fb-4 lands on the trial's side, fb-3 on the best's; each entry says which.
    third = await staff.room("fb-4", "tech-article")
    entry = (await drain(third.start()))[0]
    assert entry.content["sop"] == "tech-article@2"
    trial = {"arm": "trial", "trial": "tech-article@2", "best": "tech-article@1", "share": 0.5}
    assert entry.content["sop_trials"] == {"tech-article": trial}
    fourth = await staff.room("fb-3", "tech-article")
    entry = (await drain(fourth.start()))[0]
    assert entry.content["sop"] == "tech-article@1"
    assert entry.content["sop_trials"]["tech-article"]["arm"] == "best"
    # The old room keeps the version it ran on.
    assert first.history()[0].content["sop"] == "tech-article@1"


async def test_auto_publish_policy_puts_the_revision_into_the_next_run(staff: Staffroom) -> None:
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.settings.sop_auto_publish = True
    scenario.settings.sop_trial_share = 0.0  # no trial: the best by score serves every room
    room = await staff.room("auto-1", scenario)
    await drain(room.start())
    await drain(room.post(CORRECTION, author="author"))
    nxt = await staff.room("auto-2", scenario)
    assert (await drain(nxt.start()))[0].content["sop"] == "tech-article@2"
    metrics = await staff.sops.store.metrics("tech-article@1")
    assert metrics.runs == 1 and metrics.corrections == 1 and metrics.replaced == 1


async def test_save_phrase_extracts_a_draft_that_is_recommended_once_published(
    settings: Settings,
) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("engineer", "alice")
        await drain(dm.post("帮我评估一下灰度方案", author="alice"))
        await drain(dm.post("再补充回滚预案", author="alice"))
        events = await drain(dm.post("把这套做法记下来", author="alice"))
        extracted = next(e for e in events if e.kind == EventKind.EXTRACTION)
        assert extracted.content["extracted"] == "engineer-practice@1"
        draft = await staff.sops.store.get("engineer-practice", 1)
        assert draft.status == Status.DRAFT and draft.scope == "employee:engineer"
        assert [s.do for s in draft.steps][:2] == ["帮我评估一下灰度方案", "再补充回滚预案"]
        assert "engineer-practice" not in await staff.recommendations("employee:engineer")
        await staff.sops.store.publish("engineer-practice", 1)
        bob = await staff.dm("engineer", "bob")
        first = await drain(bob.post("你好", author="bob"))
        entry = next(e for e in first if e.kind == EventKind.PLAN)
        assert "engineer-practice@1" in entry.content["announcement"]


async def test_english_save_phrase_works_too(staff: Staffroom) -> None:
    dm = await staff.dm("pm", "carol")
    await drain(dm.post("Draft a launch checklist", author="carol"))
    events = await drain(dm.post("Please save this as an SOP", author="carol"))
    assert any(e.kind == EventKind.EXTRACTION and e.content.get("extracted") for e in events)


async def test_a_version_with_too_much_negative_feedback_is_deprecated(staff: Staffroom) -> None:
    store = staff.sops.store
    v1 = await store.get("tech-article", 1)
    await store.add_version(replace(v1, version=2, status=Status.DRAFT, change_log=()))
    await store.publish("tech-article", 2)
    for i in range(6):
        outcome = Outcome(sop_ref="tech-article@2", session=f"room:s{i}", success=False, at=f"t{i}")
        await staff.sops.record_run(outcome, feedback=False)
    v2 = await store.get("tech-article", 2)
    assert v2.status == Status.DEPRECATED
    assert "deprecated" in v2.change_log[-1].why
    assert (await staff.sops.best("tech-article")).version == 1


async def test_a_room_recommends_other_published_practice_of_its_scenario(
    staff: Staffroom,
) -> None:
    room = await staff.room("practice-1", "tech-article")
    await drain(room.start())
    await drain(room.post("继续", author="author"))
    # A room with no SOP of its own would extract "<scenario>-practice"; publish one here.
    v1 = await staff.sops.store.get("tech-article", 1)
    await staff.sops.store.add_version(replace(v1, sop_id="tech-article-practice"))
    await staff.sops.store.publish("tech-article-practice", 1)
    nxt = await staff.room("practice-2", "tech-article")
    entry = (await drain(nxt.start()))[0]
    assert entry.content["sop"] == "tech-article@1"  # still driven by its own SOP
    assert "tech-article-practice@1" in entry.content["announcement"]
