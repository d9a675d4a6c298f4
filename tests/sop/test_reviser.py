"""The rule-based reviser: structured corrections -> edit ops -> the intended next steps."""

from __future__ import annotations

import pytest

from framework.sop.corrections import parse_correction
from framework.sop.edits import EditOp, apply_edits
from framework.sop.model import Correction, Outcome, SopVersion, Status, Step
from framework.sop.revision_plan import plan_revision, propose_edits, revision_reason

TOPIC = Step(("editor",), "定选题")
DRAFT = Step(("writer",), "写初稿")
REVIEW = Step(("reviewer",), "评估")
PUBLISH = Step(("editor",), "发布")
OUTLINE = Step(("engineer",), "出提纲")
V1 = SopVersion(
    "tech-article",
    1,
    "写技术文章",
    "scenario:tech-article",
    (TOPIC, DRAFT, REVIEW, OUTLINE, PUBLISH),
    status=Status.PUBLISHED,
)


def run(*corrections: Correction, ref: str = "tech-article@1", n: int = 0) -> Outcome:
    return Outcome(ref, f"room:{n}", success=not corrections, corrections=corrections)


def revise(version: SopVersion, *outcomes: Outcome) -> tuple[list[EditOp], tuple[Step, ...]]:
    ops = propose_edits(version, outcomes)
    return ops, apply_edits(version.steps, ops)


ORDER = Correction("order", "先出提纲再写", speaker="engineer", before=2)


def test_order_correction_moves_the_step() -> None:
    ops, steps = revise(V1, run(ORDER))
    assert ops == [EditOp("move", 3, to=1, reason="1 run: 先出提纲再写")]
    assert steps == (TOPIC, OUTLINE, DRAFT, REVIEW, PUBLISH)


def test_order_by_step_number() -> None:
    ops, steps = revise(V1, run(Correction("order", "x", step=4, before=1)))
    assert [(o.op, o.index, o.to) for o in ops] == [("move", 3, 0)]
    assert steps[0] == OUTLINE


def test_missing_correction_adds_a_step_where_asked_or_at_the_end() -> None:
    check = Correction("missing", "合规自检", speaker="reviewer", do="合规自检", before=5)
    thanks = Correction("missing", "致谢", speaker="editor", do="发感谢信")
    ops, steps = revise(V1, run(check, thanks))
    assert [(o.op, o.index) for o in ops] == [("add", 4), ("add", 6)]
    assert steps == (TOPIC, DRAFT, REVIEW, OUTLINE, Step(("reviewer",), "合规自检"), PUBLISH,
                     Step(("editor",), "发感谢信"))  # fmt: skip


def test_extra_and_edit_corrections() -> None:
    extra = Correction("extra", "不需要评估", step=3)
    edit = Correction("edit", "只写提纲", step=2, do="只写提纲")
    ops, steps = revise(V1, run(extra, edit))
    assert [o.op for o in ops] == ["edit", "remove"]
    assert steps == (TOPIC, Step(("writer",), "只写提纲"), OUTLINE, PUBLISH)


def test_mixed_corrections_keep_indices_valid() -> None:
    corrections = (
        Correction("extra", "多余", step=1),
        ORDER,
        Correction("missing", "缺自检", speaker="reviewer", do="合规自检", before=2),
        Correction("edit", "改", step=5, do="发布并通知"),
    )
    ops, steps = revise(V1, run(*corrections))
    assert [o.op for o in ops] == ["edit", "remove", "move", "add"]
    # Both asked for "before step 2" (写初稿): the order one was seen first, then the addition.
    assert steps == (
        OUTLINE,
        Step(("reviewer",), "合规自检"),
        DRAFT,
        REVIEW,
        Step(("editor",), "发布并通知"),
    )


def test_an_anchor_that_is_removed_falls_to_the_next_step() -> None:
    extra = Correction("extra", "多余", step=2)
    add = Correction("missing", "缺", speaker="engineer", do="查资料", before=2)
    _, steps = revise(V1, run(extra, add))
    assert steps == (TOPIC, Step(("engineer",), "查资料"), REVIEW, OUTLINE, PUBLISH)


def test_repeated_identical_corrections_become_one_op_citing_the_runs() -> None:
    outcomes = [run(ORDER, n=1), run(ORDER, ORDER, n=2), run(n=3)]
    ops = propose_edits(V1, outcomes)
    assert len(ops) == 1
    # What happened, counted: the run that said nothing is not one of them.
    assert ops[0].reason == "2 runs: 先出提纲再写"
    assert revision_reason(ops) == "move step 4 -> 2: 2 runs: 先出提纲再写"


def test_conflicting_edits_the_most_asked_wins() -> None:
    a = Correction("edit", "a", step=2, do="写短稿")
    b = Correction("edit", "b", step=2, do="写长稿")
    ops = propose_edits(V1, [run(a, n=1), run(b, n=2), run(b, n=3)])
    assert len(ops) == 1 and ops[0].step is not None and ops[0].step.do == "写长稿"


def test_satisfied_corrections_produce_nothing() -> None:
    _, steps = revise(V1, run(ORDER))
    v2 = SopVersion("tech-article", 2, V1.goal, V1.scope, steps, status=Status.PUBLISHED)
    # The same correction, now asked on v2, is already satisfied.
    assert propose_edits(v2, [run(ORDER, ref="tech-article@2")]) == []
    satisfied = (
        Correction("order", "", speaker="writer", before=3),  # writer already step 2
        Correction("missing", "", speaker="reviewer", do="评估"),  # already there
        Correction("edit", "", step=1, do="定选题"),  # already does it
        Correction("extra", "", step=9),  # no such step
        Correction("missing", "", do="无人负责"),  # no speaker: cannot build a step
    )
    assert propose_edits(V1, [run(*satisfied)]) == []
    assert revision_reason([]) == "no change: no open corrections"


def test_outcomes_of_other_versions_are_not_read_with_this_versions_numbers() -> None:
    assert propose_edits(V1, [run(ORDER, ref="tech-article@0")]) == []
    assert len(propose_edits(V1, [run(ORDER, ref="")])) == 1


def test_never_proposes_removing_every_step() -> None:
    one = SopVersion("s", 1, "g", "global", (TOPIC, DRAFT))
    ops, steps = revise(
        one, run(Correction("extra", "", step=1), Correction("extra", "", step=2), ref="")
    )
    assert len(ops) == 1 and len(steps) == 1


def test_learning_loop_converges_on_the_ideal_order() -> None:
    # A simulated user corrects one deviation per run; each revision fixes it for good.
    version = V1
    for n in range(1, 4):
        found = [i for i, s in enumerate(version.steps) if s == OUTLINE]
        wrong = bool(found) and found[0] > 1
        corrections = (ORDER,) if wrong else ()
        outcome = run(*corrections, ref=version.ref, n=n)
        ops = propose_edits(version, [outcome])
        if not wrong:
            assert ops == []
            break
        steps = apply_edits(version.steps, ops)
        version = SopVersion(version.sop_id, version.version + 1, V1.goal, V1.scope, steps)
    assert version.version == 2 and version.steps[1] == OUTLINE


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("纠正: order engineer before 1", Correction("order", "order engineer before 1",
                                                     speaker="engineer", before=1)),
        ("纠正：order 3 before 1 先出提纲再评估", Correction("order", "先出提纲再评估",
                                                            step=3, before=1)),
        ('correction: missing reviewer "合规自检" before 4',
         Correction("missing", 'missing reviewer "合规自检" before 4', speaker="reviewer",
                    do="合规自检", before=4)),
        ("Correction: missing editor “发感谢信”", Correction("missing", "missing editor “发感谢信”",
                                                         speaker="editor", do="发感谢信")),
        ("correction: extra 3", Correction("extra", "extra 3", step=3)),
        ("更正: extra 3 — 这步多余", Correction("extra", "这步多余", step=3)),
        ('correction: edit 2 "只写提纲"', Correction("edit", 'edit 2 "只写提纲"', step=2,
                                                     do="只写提纲")),
        ("好的，谢谢\n纠正: EXTRA 2", Correction("extra", "EXTRA 2", step=2)),
    ],
)  # fmt: skip
def test_parse_correction_grammar(text: str, expected: Correction) -> None:
    assert parse_correction(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "先出提纲再写吧",
        "order engineer before 1",  # no prefix
        "纠正: 你应该先写提纲",  # prefixed but not the grammar
        "correction: extra three",
        "correction: extra 0",
        "correction: order 0 before 1",
        "correction: edit 2 只写提纲",  # unquoted
        "correction: extra 3x",
        "",
    ],
)
def test_parse_correction_ignores_ordinary_text(text: str) -> None:
    assert parse_correction(text) is None


# Issue 11: identity is exact, every deviation can be said, and runs are weighed, not raced.

FIGURES = Step(("designer",), "配图方案")


def test_a_step_is_named_by_its_whole_text_never_a_part() -> None:
    # "评估" is a part of "技术评估"; asking for the short step is asking for a new one.
    version = SopVersion("s", 1, "g", "global", (TOPIC, Step(("reviewer",), "技术评估"), PUBLISH))
    ops, steps = revise(version, run(Correction("missing", "", speaker="reviewer", do="评估"),
                                     ref="s@1"))  # fmt: skip
    assert [o.op for o in ops] == ["add"] and Step(("reviewer",), "评估") in steps
    # The whole text names the step to drop or move.
    quoted = parse_correction('纠正: extra "技术评估" 多余')
    assert quoted == Correction("extra", "多余", do="技术评估")
    _, steps = revise(version, run(quoted, ref="s@1"))
    assert steps == (TOPIC, PUBLISH)


def test_order_past_the_last_step_moves_to_the_end() -> None:
    _, steps = revise(V1, run(Correction("order", "", step=1, before=6)))
    assert steps == (DRAFT, REVIEW, OUTLINE, PUBLISH, TOPIC)


def test_opposite_requests_of_two_people_are_a_conflict_kept_as_before() -> None:
    asked = Correction("order", "", step=4, before=2, by="alice")  # outline before draft
    _, v2_steps = revise(V1, run(asked))
    v2 = SopVersion("tech-article", 2, V1.goal, V1.scope, v2_steps)
    # bob, on v2, asks the opposite: one run each way; the order goes back to v1's.
    back = Correction("order", "", step=3, before=2, by="bob")  # draft before outline
    steps_of = {V1.ref: V1.steps, v2.ref: v2.steps}
    plan = plan_revision(v2, [run(asked), run(back, ref=v2.ref, n=1)], steps_of=steps_of)
    steps = apply_edits(v2.steps, plan.ops)
    assert steps.index(DRAFT) < steps.index(OUTLINE), "the disputed order is v1's again"
    assert len(plan.conflicts) == 1 and plan.conflicts[0].startswith("conflict:")
    # carol agrees with alice: two runs against one, and the order is alice's again.
    carol = Correction("order", "", step=4, before=2, by="carol")
    runs = [run(asked), run(back, ref=v2.ref, n=1), run(carol, n=2)]
    plan = plan_revision(v2, runs, steps_of=steps_of)
    assert plan.ops == [] and plan.conflicts == []


def test_one_persons_removal_cannot_cut_a_step_others_rely_on() -> None:
    def by(user: str, *corrections: Correction, n: int) -> Outcome:
        return Outcome(V1.ref, f"room:{n}", False, corrections=corrections, user=user)

    runs = [by("bob", n=1), by("carol", n=2), by("alice", Correction("extra", "", step=3), n=3)]
    plan = plan_revision(V1, runs)
    assert plan.ops == [] and plan.conflicts[0].startswith("held: remove reviewer: 评估")
    # With nobody else relying on it, the same request removes the step.
    assert [o.op for o in plan_revision(V1, runs[2:]).ops] == ["remove"]


def test_a_persons_later_request_replaces_their_earlier_one() -> None:
    add = Correction("missing", "", speaker="editor", do="发感谢信", by="alice")
    drop_it = Correction("extra", "", do="发感谢信", by="alice")
    v2 = SopVersion(
        "tech-article", 2, V1.goal, V1.scope, (*V1.steps, Step(("editor",), "发感谢信"))
    )
    steps_of = {V1.ref: V1.steps, v2.ref: v2.steps}
    plan = plan_revision(v2, [run(add), run(drop_it, ref=v2.ref, n=1)], steps_of=steps_of)
    assert apply_edits(v2.steps, plan.ops) == V1.steps and plan.conflicts == []


def test_the_threshold_needs_that_many_runs() -> None:
    ask = Correction("order", "", step=4, before=2)
    assert plan_revision(V1, [run(ask)], threshold=2).ops == []
    assert len(plan_revision(V1, [run(ask), run(ask, n=1)], threshold=2).ops) == 1


# Found in review: requests follow a step through its rewordings; a person's later say wins
# even within one run; a speaker's step is the one out of place, not the anchor.


def test_an_added_step_reworded_later_is_not_added_again() -> None:
    add = Correction("missing", "", speaker="reviewer", do="合规自检", by="alice")
    _, v2_steps = revise(V1, run(add))
    v2 = SopVersion("tech-article", 2, V1.goal, V1.scope, v2_steps)
    reword = Correction("edit", "", step=v2_steps.index(Step(("reviewer",), "合规自检")) + 1,
                        do="合规与事实自检", by="bob")  # fmt: skip
    steps_of = {V1.ref: V1.steps, v2.ref: v2.steps}
    runs = [run(add), run(reword, ref=v2.ref, n=1)]
    v3_steps = apply_edits(v2.steps, plan_revision(v2, runs, steps_of=steps_of).ops)
    v3 = SopVersion("tech-article", 3, V1.goal, V1.scope, v3_steps)
    steps_of[v3.ref] = v3.steps
    # A clean run on v3: nothing is asked that v3 does not already do.
    assert plan_revision(v3, [*runs, run(ref=v3.ref, n=2)], steps_of=steps_of).ops == []


def test_a_persons_last_say_in_one_run_stands() -> None:
    first = Correction("order", "", step=4, before=2, by="alice")
    then = Correction("order", "", step=2, before=4, by="alice")  # changed her mind
    assert plan_revision(V1, [run(first, then)]).conflicts == []
    two_wordings = (Correction("edit", "", step=2, do="写短稿", by="alice"),
                    Correction("edit", "", step=2, do="写长稿", by="alice"))  # fmt: skip
    plan = plan_revision(V1, [run(*two_wordings)])
    assert plan.conflicts == [] and [o.step.do for o in plan.ops if o.step] == ["写长稿"]


def test_a_speaker_named_at_its_own_anchor_means_its_later_step() -> None:
    steps = (TOPIC, DRAFT, REVIEW, Step(("writer",), "改稿"))
    version = SopVersion("s", 1, "g", "global", steps)
    _, moved = revise(version, run(Correction("order", "", speaker="writer", before=2), ref="s@1"))
    assert moved == (TOPIC, Step(("writer",), "改稿"), DRAFT, REVIEW)
