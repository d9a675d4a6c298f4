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

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel

from framework.extensions.context import EmployeeModel
from framework.models.structured import answer_format, ask_structured
from framework.phrases import Phrase
from framework.prompts.environment import PromptRenderer
from framework.sop.claims import resolve, step_key, step_label
from framework.sop.edits import EditError, EditOp, apply_edits, describe, render_step
from framework.sop.model import Outcome, SopVersion, Step
from framework.sop.revision_plan import RevisionPlan, plan_revision
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
    disputed: bool = False
    """Some ops put steps back as they were before a dispute (see
    :class:`~framework.sop.revision_plan.RevisionPlan`)."""


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a reviser reads: the SOP's runs (every version, oldest first), the steps each
    version had (so a run's step numbers can be read), and how many runs must ask."""

    outcomes: Sequence[Outcome]
    steps_of: Mapping[str, Sequence[Step]] = field(default_factory=dict)
    threshold: int = 1
    language: str = "en"
    """The language reasons and conflicts are written in (the room's)."""


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


# No edit in the example: a weak model copies an example's edit (and its reason) as it is,
# and copying this one changes nothing.
EXAMPLE = EditsAnswer(edits=[])

UNASKED_REMOVAL = Phrase(
    en="it removes step {n} ({step}), which no run asked to remove: a score alone is no reason "
    "to remove a step",
    zh="它删除了第 {n} 步（{step}），但没有任何一次运行要求删除它：仅凭评分不能删除步骤",
)
MODEL_OWN = Phrase(
    en="proposed by the model, not asked in any run: {reason}",
    zh="由模型提出，没有运行要求过：{reason}",
)


def _plan(current: SopVersion, evidence: Evidence) -> RevisionPlan:
    return plan_revision(
        current,
        evidence.outcomes,
        steps_of=evidence.steps_of,
        threshold=evidence.threshold,
        language=evidence.language,
    )


async def rule_reviser(current: SopVersion, evidence: Evidence) -> Proposal:
    """The rule-based reviser (see :func:`framework.sop.revision_plan.plan_revision`)."""
    plan = _plan(current, evidence)
    return Proposal(plan.ops, by=RULES, conflicts=plan.conflicts, disputed=plan.disputed)


def _touched(ops: Sequence[EditOp], steps: tuple[Step, ...]) -> list[tuple[str, str, int]]:
    """For each op: its kind, the key of the step it concerns, and that step's 1-based number
    where the op applies (ops applied in order)."""
    out: list[tuple[str, str, int]] = []
    current = steps
    for op in ops:
        if op.op == "add" and op.step is not None:
            key = step_key(op.step)
        else:
            key = step_key(current[op.index]) if 0 <= op.index < len(current) else ""
        out.append((op.op, key, op.index + 1))
        current = apply_edits(current, [op])
    return out


def _credited(
    ops: list[EditOp], asked: list[EditOp], steps: tuple[Step, ...], language: str
) -> list[EditOp]:
    """The model's ops with counted reasons: an op the runs asked for takes the rules' reason
    (what happened, counted); any other says the model proposed it unasked."""
    counted = {
        (kind, key): op.reason
        for (kind, key, _), op in zip(_touched(asked, steps), asked, strict=True)
    }
    return [
        replace(
            op,
            reason=counted.get((kind, key)) or MODEL_OWN(language, reason=op.reason.strip() or "-"),
        )
        for (kind, key, _), op in zip(_touched(ops, steps), ops, strict=True)
    ]


def _unasked_removal(
    ops: list[EditOp], asked: list[EditOp], steps: tuple[Step, ...], language: str
) -> str | None:
    wanted = {key for kind, key, _ in _touched(asked, steps) if kind == "remove"}
    for kind, key, n in _touched(ops, steps):
        if kind == "remove" and key not in wanted:
            return UNASKED_REMOVAL(language, n=n, step=step_label(key, language))
    return None


def _runs(evidence: Evidence) -> list[dict[str, object]]:
    """The latest runs of every version, each correction as the claim it makes about step
    identities (a run's step numbers are its version's; the prompt numbers another's)."""
    runs: list[dict[str, object]] = []
    for o in list(evidence.outcomes)[-RECENT_RUNS:]:
        steps = evidence.steps_of.get(o.sop_ref, ())
        said = []
        for c in o.corrections:
            claim = resolve(c, steps)
            what = claim.describe(evidence.language) if claim else f"{c.kind} step={c.step}"
            said.append(f"{what}: {c.detail}" if c.detail else what)
        runs.append(
            {
                "success": o.success,
                "score": o.score,
                "corrections": said,
                "off_sop_turns": o.off_sop_turns,
            }
        )
    return runs


def model_reviser(model: EmployeeModel, renderer: PromptRenderer) -> Reviser:
    """A reviser that asks ``model`` for edits as JSON, called with its profile, retries and
    backoff (falls back to the rules, visibly)."""
    profile = model.profile

    async def revise(current: SopVersion, evidence: Evidence) -> Proposal:
        # The latest runs only: an SOP with many outcomes must still fit a small window.
        context = {
            "ref": current.ref,
            "goal": current.goal,
            "steps": [render_step(n, s) for n, s in enumerate(current.steps, start=1)],
            "runs": _runs(evidence),
            "answer_format": answer_format(EditsAnswer, [EXAMPLE]),
        }
        # In the SOP's own language: its steps are quoted, and edits must be written in it.
        language = sop_language(current.goal, current.steps)
        prompt = renderer.render("revise_sop.j2", context, language=language)

        # What the weighed corrections ask for; conflicts stay for the reviewers either way.
        plan = _plan(current, evidence)
        asked = plan.ops

        def check(answer: EditsAnswer) -> str | None:
            try:
                ops = edit_ops(answer, current.steps)
            except EditError as exc:  # a proposal that does not apply is not usable
                return f"the edits do not apply: {exc}"
            if not ops and asked:
                # People asked for changes in the structured form; an empty answer drops them.
                wanted = "; ".join(describe(op) for op in asked)
                return f"it proposes no edits, but the runs' corrections ask for: {wanted}"
            # A step goes only when people asked: never from a score (or an example) alone.
            return _unasked_removal(ops, asked, current.steps, evidence.language)

        answer = await ask_structured(
            model.chat,
            [SystemMessage(content=prompt), HumanMessage(content="Propose the edits as JSON.")],
            EditsAnswer,
            profile,
            examples=[EXAMPLE],
            check=check,
            retries=model.retries,
            backoff=model.backoff,
        )
        conflicts = plan.conflicts
        if answer.value is not None:
            ops = edit_ops(answer.value, current.steps)
            ops = _credited(ops, asked, current.steps, evidence.language)
            return Proposal(ops, by=f"model:{profile.label}", conflicts=conflicts)
        reason = answer.fallback_reason or "no answer"
        return Proposal(
            asked,
            by=f"{RULES} ({reason})",
            fallback=reason,
            conflicts=conflicts,
            disputed=plan.disputed,
        )

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
