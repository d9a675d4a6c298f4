"""SOP revisions people can follow: reasons count what happened, a score removes nothing, one
open draft per SOP, and disputes across questions are reported and left as before them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

from reviser_runs import run_with_reviser

from framework import Event, EventKind, Room, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.sop.edits import apply_edits
from framework.sop.model import Correction, Outcome, SopVersion, Status, Step
from framework.sop.revision_plan import plan_revision
from framework.sop.service import SopService
from framework.sop.store import SopStore

TOPIC = Step(("editor",), "定选题")
DRAFT = Step(("writer",), "写初稿")
REVIEW = Step(("reviewer",), "评估")
OUTLINE = Step(("engineer",), "出提纲")
PUBLISH = Step(("editor",), "发布")
CHECK = Step(("reviewer",), "合规自检")
V1 = SopVersion(
    "article",
    1,
    "写文章",
    "scenario:article",
    (TOPIC, DRAFT, REVIEW, OUTLINE, PUBLISH),
    status=Status.PUBLISHED,
)


def run(*said: Correction, ref: str = V1.ref, n: int = 0, user: str = "") -> Outcome:
    return Outcome(ref, f"room:{n}", success=not said, corrections=said, user=user, at=f"t{n:03}")


def version(n: int, steps: tuple[Step, ...], status: Status = Status.PUBLISHED) -> SopVersion:
    return SopVersion(V1.sop_id, n, V1.goal, V1.scope, steps, status=status)


# Reasons


def test_a_reason_counts_the_runs_and_names_who_asked_or_confirmed() -> None:
    said = Correction("order", "outline first", step=4, before=2, by="maria", confirmed=True)
    (op,) = plan_revision(V1, [run(said), run(n=1), run(n=2)]).ops
    # One run asked: not "1 of 3", and not a count of runs that said nothing.
    assert op.reason == "1 run, confirmed by maria: outline first"
    typed = Correction("order", "", step=4, before=2, by="bob")
    (op,) = plan_revision(V1, [run(said), run(typed, n=1)]).ops
    assert op.reason == "2 runs, asked by bob, confirmed by maria: outline first"
    (op,) = plan_revision(V1, [run(said)], language="zh").ops
    assert op.reason == "1 次运行，maria 确认：outline first"


def test_a_bare_score_proposes_no_edit() -> None:
    moved = Correction("order", "outline first", step=4, before=2, by="maria")
    v2 = version(2, apply_edits(V1.steps, plan_revision(V1, [run(moved)]).ops))
    scored = Outcome(v2.ref, "room:1", success=False, score=0.4, user="maria", at="t001")
    steps_of = {V1.ref: V1.steps, v2.ref: v2.steps}
    plan = plan_revision(v2, [run(moved), scored], steps_of=steps_of)
    assert plan.ops == [] and plan.conflicts == []


# Two placements of one added step


def test_one_step_added_in_two_places_is_a_conflict_left_as_before() -> None:
    here = Correction("missing", "", speaker="reviewer", do="合规自检", before=2, by="maria")
    there = Correction("missing", "", speaker="reviewer", do="合规自检", before=4, by="bob")
    plan = plan_revision(V1, [run(here), run(there, n=1)])
    assert plan.ops == []  # not the first asker's place, silently
    (conflict,) = plan.conflicts
    assert conflict.startswith("conflict: where to add reviewer: 合规自检:")
    assert "before writer: 写初稿 (1 run, asked by maria)" in conflict
    assert "before engineer: 出提纲 (1 run, asked by bob)" in conflict

    # maria's place was already published as v2; bob asks on v2: the step goes, as in v1.
    v2 = version(2, (TOPIC, CHECK, DRAFT, REVIEW, OUTLINE, PUBLISH))
    on_v2 = Correction("missing", "", speaker="reviewer", do="合规自检", before=5, by="bob")
    steps_of = {V1.ref: V1.steps, v2.ref: v2.steps}
    plan = plan_revision(v2, [run(here), run(on_v2, ref=v2.ref, n=1)], steps_of=steps_of)
    assert apply_edits(v2.steps, plan.ops) == V1.steps and plan.disputed
    # carol agrees with bob: two runs against one, and the step moves to bob's place.
    carol = Correction("missing", "", speaker="reviewer", do="合规自检", before=5, by="carol")
    runs = [run(here), run(on_v2, ref=v2.ref, n=1), run(carol, ref=v2.ref, n=2)]
    plan = plan_revision(v2, runs, steps_of=steps_of)
    assert apply_edits(v2.steps, plan.ops) == (TOPIC, DRAFT, REVIEW, CHECK, OUTLINE, PUBLISH)
    assert plan.conflicts == []


# A circle of order requests


def circle() -> tuple[list[Outcome], dict[str, tuple[Step, ...]], SopVersion]:
    """maria: outline before draft (v1 -> v2); bob: review before outline (v2 -> v3); maria
    again: draft before review (on v3). The three cannot all hold."""
    v2 = version(2, (TOPIC, OUTLINE, DRAFT, REVIEW, PUBLISH))
    v3 = version(3, (TOPIC, REVIEW, OUTLINE, DRAFT, PUBLISH))
    runs = [
        run(Correction("order", "", step=4, before=2, by="maria")),
        run(Correction("order", "", step=4, before=2, by="bob"), ref=v2.ref, n=1),
        run(Correction("order", "", step=4, before=2, by="maria"), ref=v3.ref, n=2),
    ]
    return runs, {V1.ref: V1.steps, v2.ref: v2.steps, v3.ref: v3.steps}, v3


def test_a_circle_of_order_requests_is_a_conflict_and_the_order_goes_back() -> None:
    runs, steps_of, v3 = circle()
    plan = plan_revision(v3, runs, steps_of=steps_of)
    (conflict,) = plan.conflicts
    assert conflict.startswith("conflict: order requests go round in a circle (")
    for request in (
        "engineer: 出提纲 before writer: 写初稿 (1 run, asked by maria)",
        "reviewer: 评估 before engineer: 出提纲 (1 run, asked by bob)",
        "writer: 写初稿 before reviewer: 评估 (1 run, asked by maria)",
    ):
        assert request in conflict
    # Neither the newest request nor the oldest wins: the order before the dispute.
    assert apply_edits(v3.steps, plan.ops) == V1.steps and plan.disputed
    assert all("before the dispute" in op.reason for op in plan.ops)


async def test_going_back_before_a_dispute_is_not_blocked_by_a_retired_version(
    tmp_path: Path,
) -> None:
    runs, _, v3 = circle()
    service = SopService(await SopStore.open(tmp_path / "sops.sqlite"))
    try:
        store = service.store
        await store.add_version(V1)
        await store.add_version(version(2, steps_of_circle(2)))
        await store.add_version(v3)
        # v1 lost to v2 in a trial: retired. The circle's way back is v1's steps all the same.
        await store.deprecate(V1.sop_id, 1, "superseded by article@2 in a trial", by="trial")
        for outcome in runs:
            await store.record_outcome(outcome)
        revision = await service.revise(v3, reviewers=["lead"])
        assert revision is not None and revision.version.ref == "article@4"
        assert revision.version.steps == V1.steps and revision.version.status == Status.DRAFT
        assert any("circle" in c for c in revision.conflicts)
        assert not any("not proposed again" in c for c in revision.conflicts)
    finally:
        await service.close()


def steps_of_circle(n: int) -> tuple[Step, ...]:
    return {2: (TOPIC, OUTLINE, DRAFT, REVIEW, PUBLISH)}[n]


# One open draft


async def test_a_new_draft_retires_the_open_one_carries_its_changes_and_resets_approvals(
    tmp_path: Path,
) -> None:
    service = SopService(await SopStore.open(tmp_path / "sops.sqlite"))
    try:
        store = service.store
        await store.add_version(V1)
        moved = Correction("order", "outline first", step=4, before=2, by="maria", confirmed=True)
        await store.record_outcome(run(moved, user="maria"))
        first = await service.revise(V1, reviewers=["lead"])
        assert first is not None and first.version.ref == "article@2" and first.notes == []
        await store.approve(V1.sop_id, 2, "lead")

        # Another run on v1 (v2 is a draft: rooms still run v1) asks for a new step.
        add = Correction("missing", "", speaker="reviewer", do="合规自检", by="bob")
        await store.record_outcome(run(add, n=1, user="bob"))
        second = await service.revise(V1, reviewers=["lead"])
        assert second is not None and second.version.ref == "article@3"
        v3 = second.version
        # v2's change is carried forward; only the new one is this draft's edit.
        assert v3.steps == (TOPIC, OUTLINE, DRAFT, REVIEW, PUBLISH, CHECK)
        assert [op.op for op in second.ops] == ["add"]
        assert [e.version for e in v3.change_log] == [2, 3]
        assert "1 run, confirmed by maria" in v3.change_log[0].why
        assert "1 run, asked by bob" in v3.change_log[1].why
        # Immutable versions: v2 is retired, saying by what; approvals start over.
        v2 = await store.get(V1.sop_id, 2)
        assert v2.status == Status.DEPRECATED and v2.steps == (TOPIC, OUTLINE, DRAFT, REVIEW,
                                                               PUBLISH)  # fmt: skip
        assert v2.change_log[-1].why == (
            "deprecated: superseded by draft article@3, which carries its changes forward"
        )
        assert v3.approvals == () and second.supersedes == "article@2"
        assert second.notes == [
            "article@3 replaces the open draft article@2 (now retired) and carries its "
            "changes forward; approvals start over",
            "approved article@2 before: lead; approve article@3 again",
        ]
        drafts = [v for v in await store.versions(V1.sop_id) if v.status == Status.DRAFT]
        assert [v.ref for v in drafts] == ["article@3"]

        # A superseded draft never ran: a later proposal with its steps is made again.
        await store.approve(V1.sop_id, 3, "lead")
        await service.publish(V1.sop_id, 3)
        drop = Correction("extra", "", do="合规自检", by="bob")
        await store.record_outcome(run(drop, ref="article@3", n=2, user="bob"))
        third = await service.revise(await store.get(V1.sop_id, 3), reviewers=["lead"])
        assert third is not None and third.version.ref == "article@4"
        assert third.version.steps == v2.steps and third.supersedes is None
    finally:
        await service.close()


# In a room, and with a model as reviser


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def closed_run(staff: Staffroom, room_id: str) -> Room:
    """A tech-article run the author let finish without a word of correction."""
    room = await staff.room(room_id, "tech-article")
    await drain(room.start())
    events = await drain(room.post("方向没问题，继续", author="author"))
    assert any(e.kind == EventKind.FEEDBACK for e in events), "the run closed"
    return room


async def test_a_rooms_new_draft_says_it_replaces_the_open_one(staff: Staffroom) -> None:
    first = await closed_run(staff, "d-1")
    await drain(first.post("纠正: order 3 before 2 先定配图", author="author"))
    second = await closed_run(staff, "d-2")
    assert second.history()[0].content["sop"] == "tech-article@1", "v2 is only a draft"
    events = await drain(second.post('纠正: missing pm "发布前通知读者"', author="author"))
    revision = next(e for e in events if e.kind == EventKind.REVISION).content
    assert revision["sop"] == "tech-article@3" and revision["supersedes"] == "tech-article@2"
    assert revision["notes"] == [
        "tech-article@3 取代了未发布的草稿 tech-article@2（已停用），"
        "并保留了它的改动；审批需要重新进行"
    ]
    assert revision["why"].endswith('1 次运行，author 提出：missing pm "发布前通知读者"')
    v3 = await staff.sops.store.get("tech-article", 3)
    assert [s.speakers[0] for s in v3.steps] == ["pm", "designer", "engineer", "pm", "pm"]


async def model_revises(
    settings: Settings, *replies: object
) -> tuple[SopVersion, list[Event], ScriptedChatModel]:
    """Run tech-article once with a correction and a bare score; pm's model revises."""
    run = await run_with_reviser(settings, *replies, room="m-1")
    return run.draft, run.history, run.model


def edits(*items: dict[str, object]) -> str:
    return json.dumps({"edits": list(items)})


MOVE = {"op": "move", "step": 3, "to": 2, "reason": "2 of 3 runs asked to do step 3 first"}
REMOVE_MOVED = {"op": "remove", "step": 2, "reason": "2 of 2 ran did not move"}


async def test_a_model_cannot_remove_a_step_nobody_asked_to_remove(settings: Settings) -> None:
    draft, events, model = await model_revises(
        settings, edits(MOVE, REMOVE_MOVED), edits(MOVE, REMOVE_MOVED)
    )
    retry = str(model.calls[-1][-1].content)
    # Told in the room's language (the scenario is Chinese).
    assert "它删除了第 2 步（designer: 配图方案" in retry and "没有任何一次运行要求删除它" in retry
    # The step the person asked to move is moved, not deleted: the rules stand in, visibly.
    assert [s.speakers[0] for s in draft.steps] == ["pm", "designer", "engineer", "pm"]
    (fallback,) = [e.content for e in events if e.kind == EventKind.FALLBACK]
    assert "仅凭评分不能删除步骤" in fallback["reason"]


async def test_a_models_edit_gets_the_counted_reason_not_its_own(settings: Settings) -> None:
    draft, _, _ = await model_revises(settings, edits(MOVE))
    assert draft.change_log[-1].by.startswith("model:")  # type: ignore[union-attr]
    # In the room's language, all of it.
    assert draft.change_log[-1].why == "第 3 步移到第 2 步：1 次运行，author 提出：先定配图"
    assert "2 of 3" not in draft.change_log[-1].why


async def test_drafts_from_before_the_rule_are_retired_too(tmp_path: Path) -> None:
    service = SopService(await SopStore.open(tmp_path / "sops.sqlite"))
    try:
        store = service.store
        await store.add_version(V1)
        # Two drafts side by side, as extraction or older code left them.
        await store.add_version(version(2, (TOPIC, DRAFT, PUBLISH), Status.DRAFT))
        await store.add_version(version(3, (TOPIC, REVIEW, PUBLISH), Status.DRAFT))
        add = Correction("missing", "", speaker="reviewer", do="合规自检", by="bob")
        await store.record_outcome(run(add, user="bob"))
        revision = await service.revise(V1)
        assert revision is not None and revision.version.ref == "article@4"
        assert revision.supersedes == "article@3"  # the newest is built on
        drafts = [v.ref for v in await store.versions(V1.sop_id) if v.status == Status.DRAFT]
        assert drafts == ["article@4"]
        v2 = await store.get(V1.sop_id, 2)
        assert "staffroom sop diff article 2 4" in v2.change_log[-1].why
    finally:
        await service.close()
