"""Revisers: who turns a version's outcomes into edit operations, and who gets the credit.

Two implementations behind one signature: the rule-based reviser (structured corrections,
used with the offline simulator) and a chat model prompted with ``revise_sop.j2`` through
:func:`~framework.models.structured.ask_structured`. Both produce :class:`EditOp` s that go
through the same ``apply_edits`` path. A model answer that is not JSON, does not match the
schema or does not apply is retried once with the problem shown; after that the rules stand
in, and the :class:`Proposal` says so (its ``by`` goes into the version's change log, its
``fallback`` into a ``fallback`` event), so feedback never stops on a bad reply and never
hides one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from framework.models.profile import ModelProfile
from framework.models.structured import answer_format, ask_structured
from framework.prompts.environment import PromptRenderer
from framework.sop.edits import EditError, EditOp, apply_edits, describe, render_step
from framework.sop.model import Outcome, SopVersion, Step
from framework.sop.reviser import plan_revision
from framework.specs.sop_text import sop_language

RULES = "rules"
RECENT_RUNS = 8
"""Runs of a version shown to a model reviser (the newest)."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """A reviser's edits and who proposed them."""

    ops: list[EditOp]
    by: str
    """``model:<label>``, ``rules``, or ``rules (<why the model's edits were not used>)``."""
    fallback: str | None = None
    """Why the rules stood in for the model (None when they did not)."""
    conflicts: list[str] = field(default_factory=list)
    """What runs asked but was not done: opposing requests, removals others rely on."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a reviser reads: the SOP's runs (every version, oldest first), the steps each
    version had (so a run's step numbers can be read), and how many runs must ask."""

    outcomes: Sequence[Outcome]
    steps_of: Mapping[str, Sequence[Step]] = field(default_factory=dict)
    threshold: int = 1


Reviser = Callable[[SopVersion, Evidence], Awaitable[Proposal]]


class EditAnswer(BaseModel):
    """One edit as a model writes it; step numbers are 1-based, as the prompt shows them."""

    op: Literal["add", "remove", "move", "edit"]
    step: int | None = None
    """The step to move, remove or edit."""
    to: int | None = None
    """``move``: where the step goes."""
    speaker: str | None = None
    """``add``: the employee id of the new step."""
    do: str | None = None
    """``add`` / ``edit``: what the step does."""
    before: int | None = None
    """``add``: the step the new one goes before (None: at the end)."""
    reason: str = ""


class EditsAnswer(BaseModel):
    """The JSON a model answers ``revise_sop.j2`` with."""

    edits: list[EditAnswer]


EXAMPLE = EditsAnswer(
    edits=[EditAnswer(op="move", step=3, to=2, reason="2 of 3 runs asked to do step 3 first")]
)


def _plan(current: SopVersion, evidence: Evidence) -> tuple[list[EditOp], list[str]]:
    plan = plan_revision(
        current, evidence.outcomes, steps_of=evidence.steps_of, threshold=evidence.threshold
    )
    return plan.ops, plan.conflicts


async def rule_reviser(current: SopVersion, evidence: Evidence) -> Proposal:
    """The rule-based reviser (see :func:`framework.sop.reviser.plan_revision`)."""
    ops, conflicts = _plan(current, evidence)
    return Proposal(ops, by=RULES, conflicts=conflicts)


def model_reviser(
    model: BaseChatModel,
    renderer: PromptRenderer,
    profile: ModelProfile,
    *,
    retries: int = 2,
    backoff: float = 1.0,
) -> Reviser:
    """A reviser that asks ``model`` for edits as JSON (falls back to the rules, visibly)."""

    async def revise(current: SopVersion, evidence: Evidence) -> Proposal:
        # The latest runs only: a version with many outcomes must still fit a small window.
        runs = [o for o in evidence.outcomes if o.sop_ref == current.ref][-RECENT_RUNS:]
        context = {
            "ref": current.ref,
            "goal": current.goal,
            "steps": [render_step(n, s) for n, s in enumerate(current.steps, start=1)],
            "runs": [
                {
                    "success": o.success,
                    "score": o.score,
                    "corrections": [f"{c.kind} step={c.step}: {c.detail}" for c in o.corrections],
                    "off_sop_turns": o.off_sop_turns,
                }
                for o in runs
            ],
            "answer_format": answer_format(EditsAnswer, [EXAMPLE]),
        }
        # In the SOP's own language: its steps are quoted, and edits must be written in it.
        language = sop_language(current.goal, current.steps)
        prompt = renderer.render("revise_sop.j2", context, language=language)

        # What the weighed corrections ask for; conflicts stay for the reviewers either way.
        asked, conflicts = _plan(current, evidence)

        def check(answer: EditsAnswer) -> str | None:
            try:
                ops = edit_ops(answer, current.steps)
            except EditError as exc:  # a proposal that does not apply is not usable
                return f"the edits do not apply: {exc}"
            if not ops and asked:
                # People asked for changes in the structured form; an empty answer drops them.
                wanted = "; ".join(describe(op) for op in asked)
                return f"it proposes no edits, but the runs' corrections ask for: {wanted}"
            return None

        answer = await ask_structured(
            model,
            [SystemMessage(content=prompt), HumanMessage(content="Propose the edits as JSON.")],
            EditsAnswer,
            profile,
            examples=[EXAMPLE],
            check=check,
            retries=retries,
            backoff=backoff,
        )
        if answer.value is not None:
            ops = edit_ops(answer.value, current.steps)
            return Proposal(ops, by=f"model:{profile.label}", conflicts=conflicts)
        reason = answer.fallback_reason or "no answer"
        return Proposal(asked, by=f"{RULES} ({reason})", fallback=reason, conflicts=conflicts)

    return revise


def edit_ops(answer: EditsAnswer, steps: tuple[Step, ...]) -> list[EditOp]:
    """Edit ops from a model's answer, checked by applying each in turn.

    Step numbers refer to the list as it is after the previous edits (as the prompt says),
    so an ``edit`` rewords the step that is at that place then. Raises :class:`EditError`
    naming the edit and, in the prompt's 1-based numbers, what is missing or out of range.
    """
    ops: list[EditOp] = []
    current = steps
    for n, raw in enumerate(answer.edits, start=1):
        where = f"edit {n} ({raw.op})"

        def index(value: int | None, name: str, last: int, *, where: str = where) -> int:
            if value is None:
                raise EditError(f"{where} needs '{name}'")
            if not 1 <= value <= last:
                raise EditError(f"{where}: {name} {value} is not a step number 1..{last}")
            return value - 1

        size = len(current)
        if raw.op == "move":
            to = index(raw.to, "to", size)
            op = EditOp("move", index(raw.step, "step", size), to=to, reason=raw.reason)
        elif raw.op == "remove":
            op = EditOp("remove", index(raw.step, "step", size), reason=raw.reason)
        elif raw.op == "add":
            if not raw.speaker or not raw.do:
                raise EditError(f"{where} needs 'speaker' and 'do'")
            at = size if raw.before is None else index(raw.before, "before", size + 1)
            op = EditOp("add", at, step=Step((raw.speaker,), raw.do), reason=raw.reason)
        else:
            at = index(raw.step, "step", size)
            if not raw.do:
                raise EditError(f"{where} needs 'do'")
            op = EditOp("edit", at, step=replace(current[at], do=raw.do), reason=raw.reason)
        try:
            current = apply_edits(current, [op])
        except EditError as exc:  # e.g. removing the last step
            raise EditError(f"{where}: {exc}") from exc
        ops.append(op)
    return ops


def recorded(reviser: Reviser, proposals: list[Proposal]) -> Reviser:
    """``reviser``, also keeping each proposal in ``proposals``.

    The caller learns of a fallback even when the rules then propose nothing, and so no
    version (and no change log entry) is made.
    """

    async def revise(current: SopVersion, evidence: Evidence) -> Proposal:
        proposal = await reviser(current, evidence)
        proposals.append(proposal)
        return proposal

    return revise
