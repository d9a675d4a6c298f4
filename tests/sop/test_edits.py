"""Edit operations on SOP steps: every op, its errors, descriptions and the step diff."""

from __future__ import annotations

import pytest

from framework.sop.edits import EditError, EditOp, apply_edits, describe, diff_steps, render_step
from framework.sop.model import Step

A = Step(("editor",), "定选题")
B = Step(("writer",), "写初稿")
C = Step(("reviewer",), "评估")
OUTLINE = Step(("engineer",), "出提纲")
STEPS = (A, B, C)


def test_add_inserts_at_position_including_the_end() -> None:
    assert apply_edits(STEPS, [EditOp("add", 0, step=OUTLINE)]) == (OUTLINE, A, B, C)
    assert apply_edits(STEPS, [EditOp("add", 3, step=OUTLINE)]) == (A, B, C, OUTLINE)


def test_remove_edit_and_move() -> None:
    assert apply_edits(STEPS, [EditOp("remove", 1)]) == (A, C)
    assert apply_edits(STEPS, [EditOp("edit", 1, step=OUTLINE)]) == (A, OUTLINE, C)
    assert apply_edits(STEPS, [EditOp("move", 2, to=0)]) == (C, A, B)
    assert apply_edits(STEPS, [EditOp("move", 0, to=2)]) == (B, C, A)


def test_ops_apply_in_order_on_the_running_result() -> None:
    ops = [EditOp("remove", 0), EditOp("add", 0, step=OUTLINE), EditOp("move", 2, to=0)]
    # after remove: (B, C); after add: (OUTLINE, B, C); after move: (C, OUTLINE, B)
    assert apply_edits(STEPS, ops) == (C, OUTLINE, B)


def test_no_ops_returns_the_same_steps() -> None:
    assert apply_edits(STEPS, []) == STEPS


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (EditOp("add", 4, step=OUTLINE), "index 4 is out of range 0..3"),
        (EditOp("add", -1, step=OUTLINE), "out of range"),
        (EditOp("remove", 3), "index 3 is out of range 0..2"),
        (EditOp("edit", 5, step=OUTLINE), "out of range"),
        (EditOp("move", 3, to=0), "out of range"),
        (EditOp("move", 0, to=3), "target index 'to' 3 is out of range"),
        (EditOp("move", 0), "needs a target index"),
        (EditOp("add", 0), "add needs the new step"),
        (EditOp("edit", 0), "edit needs the new step"),
        (EditOp("add", 0, step=Step((), "无人负责")), "no speakers"),
        (EditOp("edit", 1, step=Step((), "无人负责")), "no speakers"),
        (EditOp("rename", 0), "unknown op 'rename'"),  # type: ignore[arg-type]
    ],
)
def test_bad_ops_say_which_op_and_why(op: EditOp, message: str) -> None:
    with pytest.raises(EditError, match=message) as info:
        apply_edits(STEPS, [EditOp("edit", 0, step=A), op])
    assert f"op 2 ({op.op} at index {op.index})" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_removing_every_step_is_refused() -> None:
    with pytest.raises(EditError, match="no steps"):
        apply_edits((A,), [EditOp("remove", 0)])


def test_describe_is_one_readable_one_based_line() -> None:
    assert describe(EditOp("move", 2, to=0, reason="用户两次要求先出提纲")) == (
        "move step 3 -> 1: 用户两次要求先出提纲"
    )
    assert describe(EditOp("add", 3, step=OUTLINE, reason="缺少")) == (
        "add step 4 (engineer: 出提纲): 缺少"
    )
    assert describe(EditOp("edit", 0, step=OUTLINE)) == "edit step 1 (engineer: 出提纲)"
    assert describe(EditOp("remove", 1, reason="多余")) == "remove step 2: 多余"
    assert describe(EditOp("move", 0)) == "move step 1 -> ?"
    assert all("\n" not in describe(EditOp("remove", i)) for i in range(3))


def test_render_step_shows_tools_fallback_and_flags() -> None:
    step = Step(("a", "b"), "并行检查", tools=("search",), fallback="跳过", parallel=True)
    assert render_step(2, step) == "2. a | b: 并行检查 [tools: search] (fallback: 跳过) (parallel)"
    assert render_step(1, Step(("author",), "确认", waits_for_input=True)).endswith(
        "(waits for input)"
    )


def test_diff_of_equal_steps_is_empty() -> None:
    assert diff_steps(STEPS, STEPS) == []


def test_diff_shows_moves_adds_removes_and_edits_with_step_numbers() -> None:
    new = apply_edits(
        STEPS,
        [EditOp("move", 2, to=0), EditOp("add", 3, step=OUTLINE), EditOp("remove", 1)],
    )
    assert new == (C, B, OUTLINE)
    lines = diff_steps(STEPS, new, old_label="tech-article@1", new_label="tech-article@2")
    assert lines[:2] == ["--- tech-article@1", "+++ tech-article@2"]
    assert "+ 1. reviewer: 评估" in lines
    assert "- 1. editor: 定选题" in lines
    assert "  2. writer: 写初稿" in lines
    assert "- 3. reviewer: 评估" in lines
    assert "+ 3. engineer: 出提纲" in lines
    assert all(line[:2] in ("--", "++", "  ", "- ", "+ ") for line in lines)


def test_diff_of_an_edit_shows_old_and_new_line() -> None:
    edited = (A, Step(("writer",), "只写提纲"), C)
    assert diff_steps(STEPS, edited) == [
        "--- old",
        "+++ new",
        "  1. editor: 定选题",
        "- 2. writer: 写初稿",
        "+ 2. writer: 只写提纲",
        "  3. reviewer: 评估",
    ]
