"""Edit operations on an SOP's steps: the one code path that turns a proposal into a version.

Both revisers (the prompt with a real model, the rule-based one with the simulator) produce a
list of :class:`EditOp`; :func:`apply_edits` applies it to a version's steps to make the next
version's steps. Everything here is pure: no I/O, deterministic.

Indices in an :class:`EditOp` are 0-based and refer to the step list *as it is when that op
runs* (ops apply in order). Human-facing text (:func:`describe`, :func:`diff_steps`) uses
1-based step numbers, as SOP cards and corrections do.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from framework.errors import StaffroomError
from framework.phrases import Phrase
from framework.sop.model import Step

OpKind = Literal["add", "remove", "move", "edit"]


class EditError(StaffroomError, ValueError):
    """An edit operation that cannot be applied; the message names the op and why.

    (A ``ValueError`` too, as it was before it joined the error tree.)"""


@dataclass(frozen=True, slots=True)
class EditOp:
    """One change to a step list, with the reason a reviewer will read in the change_log."""

    op: OpKind
    index: int
    """0-based position the op concerns; for ``add``, the position the new step is inserted."""
    step: Step | None = None
    """The new step, for ``add`` and ``edit``."""
    to: int | None = None
    """For ``move``: the step's 0-based position after the move."""
    reason: str = ""


def apply_edits(steps: tuple[Step, ...], ops: Sequence[EditOp]) -> tuple[Step, ...]:
    """Apply ``ops`` in order to ``steps`` and return the new steps.

    An ``edit`` whose new step declares no products keeps the products of the step it
    replaces: proposers reword what a step does (the model reviser rebuilds the step from
    its new wording), and rewording must not drop the evidence the step has to leave.

    Raises :class:`EditError` for an unknown op, an index out of range, ``add``/``edit``
    without a step, a step with no speakers, ``move`` without ``to``, or an empty result.
    """
    result = list(steps)
    for n, op in enumerate(ops, start=1):
        where = f"op {n} ({op.op} at index {op.index})"
        if op.op == "add":
            _check_index(where, op.index, len(result) + 1)
            result.insert(op.index, _new_step(where, op))
        elif op.op == "remove":
            _check_index(where, op.index, len(result))
            del result[op.index]
        elif op.op == "move":
            _check_index(where, op.index, len(result))
            if op.to is None:
                raise EditError(f"{where}: move needs a target index 'to'")
            _check_index(where, op.to, len(result), what="target index 'to'")
            result.insert(op.to, result.pop(op.index))
        elif op.op == "edit":
            _check_index(where, op.index, len(result))
            new = _new_step(where, op)
            if not new.produces:
                new = replace(new, produces=result[op.index].produces)
            result[op.index] = new
        else:
            raise EditError(f"{where}: unknown op {op.op!r} (expected add, remove, move or edit)")
    if not result:
        raise EditError("the edits leave no steps: an SOP needs at least one step")
    return tuple(result)


def _check_index(where: str, index: int, size: int, *, what: str = "index") -> None:
    # ``size`` is the count of valid positions (len + 1 for an insert).
    if not 0 <= index < size:
        raise EditError(f"{where}: {what} {index} is out of range 0..{size - 1}")


def _new_step(where: str, op: EditOp) -> Step:
    if op.step is None:
        raise EditError(f"{where}: {op.op} needs the new step")
    if not op.step.speakers:
        raise EditError(f"{where}: the new step has no speakers (who does {op.step.do!r}?)")
    return op.step


def render_step(number: int, step: Step) -> str:
    """One readable line for a step: ``3. writer + editor: 写初稿 [tools: search] → draft.md``."""
    return f"{number}. {_step_text(step)}"


def _step_text(step: Step) -> str:
    joiner = " | " if step.parallel else " + "
    text = f"{joiner.join(step.speakers) or '?'}: {step.do}"
    if step.tools:
        text += f" [tools: {', '.join(step.tools)}]"
    if step.produces:
        text += f" → {', '.join(step.produces)}"
    if step.fallback:
        text += f" (fallback: {step.fallback})"
    if step.waits_for_input:
        text += " (waits for input)"
    if step.parallel:
        text += " (parallel)"
    return text


MOVE = Phrase(
    en="move step {n} -> {to}",
    zh="第 {n} 步移到第 {to} 步",
)
REMOVE = Phrase(
    en="remove step {n}",
    zh="去掉第 {n} 步",
)
ADD = Phrase(
    en="add step {n} ({step})",
    zh="加第 {n} 步（{step}）",
)
EDIT = Phrase(
    en="edit step {n} ({step})",
    zh="改写第 {n} 步（{step}）",
)
WHY = Phrase(
    en="{head}: {reason}",
    zh="{head}：{reason}",
)


def describe(op: EditOp, language: str = "en") -> str:
    """One readable line for an op, 1-based: ``move step 3 -> 1: 用户两次要求先出提纲``."""
    n = op.index + 1
    if op.op == "move":
        head = MOVE(language, n=n, to="?" if op.to is None else op.to + 1)
    elif op.op in ("add", "edit") and op.step is not None:
        head = (ADD if op.op == "add" else EDIT)(language, n=n, step=_step_text(op.step))
    elif op.op == "remove":
        head = REMOVE(language, n=n)
    else:
        head = f"{op.op} step {n}"
    return WHY(language, head=head, reason=op.reason) if op.reason else head


def diff_steps(
    old: Sequence[Step], new: Sequence[Step], *, old_label: str = "old", new_label: str = "new"
) -> list[str]:
    """A step-level diff in unified style, for ``staffroom sop diff``.

    Returns ``[]`` when the steps are equal. Otherwise two header lines (``--- old``,
    ``+++ new``) then every step once: `` `` unchanged (new number), ``-`` removed (old
    number), ``+`` added (new number). A moved step shows as removed and added; an edited
    one as its old line removed and its new line added. All steps are shown because SOPs are
    short and the context is what a reviewer needs.
    """
    if tuple(old) == tuple(new):
        return []
    lines = [f"--- {old_label}", f"+++ {new_label}"]
    matcher = difflib.SequenceMatcher(a=list(old), b=list(new), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            lines += [f"  {render_step(j + 1, new[j])}" for j in range(j1, j2)]
            continue
        lines += [f"- {render_step(i + 1, old[i])}" for i in range(i1, i2)]
        lines += [f"+ {render_step(j + 1, new[j])}" for j in range(j1, j2)]
    return lines
