"""The revision plan: the corrections of runs -> edit operations on the SOP, in a safe order.

People (and simulated users) state corrections in a small structured form
(:func:`~framework.sop.corrections.parse_correction`); :func:`plan_revision` weighs the
corrections of every run
(:mod:`framework.sop.claims`: by step identity, support against opposition) and turns the
accepted ones into :class:`~framework.sop.edits.EditOp` s that
:func:`~framework.sop.edits.apply_edits` applies, the same code path the model-driven reviser
uses. Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from framework.phrases import Phrase, language_or_default
from framework.sop.claims import Weighed, step_key, support, weigh
from framework.sop.disputes import place, restore_moves, settle
from framework.sop.edits import EditOp, describe
from framework.sop.model import Outcome, SopVersion, Step

CONFLICT = Phrase(
    en="conflict: {claim} ({asked}) and the opposite ({against}): kept as it was before the "
    "dispute until more runs ask one way",
    zh="冲突：{claim}（{asked}）与相反的要求（{against}）："
    "保持争议之前的样子，等更多运行支持某一方再改",
)
HELD = Phrase(
    en="held: {claim} asked by {asked}; {others} ran it without asking: not removed",
    zh="暂缓：{claim} 由 {asked} 提出；{others} 运行过这一步且没有要求去掉：不删除",
)
REWORDINGS = Phrase(
    en="conflict: {texts}, as many runs each: left as it is",
    zh="冲突：{texts}，双方运行次数相同：保持不变",
)
REASON = Phrase(
    en="{support}: {detail}",
    zh="{support}：{detail}",
)
NO_CHANGE = Phrase(
    en="no change: no open corrections",
    zh="无改动：没有待处理的纠正",
)


@dataclass(frozen=True, slots=True)
class RevisionPlan:
    """The edits the runs ask for, and what was asked but not done (and why)."""

    ops: list[EditOp]
    conflicts: list[str] = field(default_factory=list)
    """Opposing requests with equal support, removals others rely on, placements and circles
    of requests: for reviewers."""
    disputed: bool = False
    """Some ops put steps back as they were before a dispute (a tie, a placement, a circle):
    their result may be a retired version's steps, which is then wanted again."""


def propose_edits(
    current: SopVersion,
    outcomes: Sequence[Outcome],
    *,
    steps_of: Mapping[str, Sequence[Step]] | None = None,
    threshold: int = 1,
) -> list[EditOp]:
    """Edit ops that make ``current`` satisfy what the runs in ``outcomes`` ask for (see
    :func:`plan_revision`, which also says what was held back)."""
    return plan_revision(current, outcomes, steps_of=steps_of, threshold=threshold).ops


def plan_revision(
    current: SopVersion,
    outcomes: Sequence[Outcome],
    *,
    steps_of: Mapping[str, Sequence[Step]] | None = None,
    threshold: int = 1,
    language: str = "en",
) -> RevisionPlan:
    """Weigh the corrections of ``outcomes`` (:mod:`framework.sop.claims`) and plan the edits.

    Each correction is read against the steps of the version it was made on: ``steps_of``
    maps refs to steps (``current`` is always known; an outcome of an unknown version is
    skipped). A claim is acted on when at least ``threshold`` runs ask for it and more runs
    ask for it than for its opposite; a claim ``current`` already satisfies gives no op, so a
    fixed issue never produces a new edit. Disputes across questions (one step added in two
    places, order requests in a circle: :mod:`framework.sop.disputes`) are reported and their
    steps left as before the dispute. Ops come in an order whose indices stay valid when
    applied in sequence: edits, removals (back to front), moves (in the order asked: ``A before
    B`` puts A right before B), then additions (right before their anchor, or at the end).
    Each reason counts what happened: ``1 run, confirmed by maria: <their words>``.
    """
    known: dict[str, Sequence[Step]] = dict(steps_of or {})
    known[current.ref] = current.steps
    weighed = weigh(outcomes, known, current.ref)
    return _Planner(current.steps, threshold, language).plan(weighed)


class _Planner:
    """Applies accepted claims to the steps, then emits ops in an index-safe order."""

    def __init__(self, steps: tuple[Step, ...], threshold: int, language: str) -> None:
        self.steps = steps
        self.keys = [step_key(s) for s in steps]
        self.threshold = threshold
        self.language = language
        self.conflicts: list[str] = []

    def _support(self, runs: set[int], users: set[str], confirmed: set[str]) -> str:
        return support(len(runs), users, confirmed, self.language)

    def _reason(self, w: Weighed) -> str:
        detail = w.claim.detail.strip() or w.claim.describe(self.language)
        said = self._support(w.runs, w.users, w.confirmed)
        return REASON(self.language, support=said, detail=detail)

    def _report(self, w: Weighed, verdict: str, weighed: list[Weighed]) -> None:
        lang = self.language
        if verdict in ("conflict", "restore"):
            rivals = [o for o in weighed if w.claim.opposes(o.claim)]
            users = set().union(*(o.users for o in rivals)) if rivals else set()
            sure = set().union(*(o.confirmed for o in rivals)) if rivals else set()
            self.conflicts.append(
                CONFLICT(
                    lang,
                    claim=w.claim.describe(lang),
                    asked=self._support(w.runs, w.users, w.confirmed),
                    against=self._support(w.against, users, sure),
                )
            )
        elif verdict == "held":
            others = sorted(w.relying - w.users)
            self.conflicts.append(
                HELD(
                    lang,
                    claim=w.claim.describe(lang),
                    asked=", ".join(sorted(w.users)),
                    others=", ".join(others),
                )
            )

    def plan(self, weighed: list[Weighed]) -> RevisionPlan:
        accepted: list[Weighed] = []
        reported: set[tuple[str, ...]] = set()
        disputed = False
        for w in sorted(weighed, key=lambda w: not w.restores):  # report a tie once, as kept
            verdict = w.verdict(self.threshold)
            if w.claim.question not in reported and verdict in ("restore", "conflict", "held"):
                reported.add(w.claim.question)
                self._report(w, verdict, weighed)
            if verdict in ("accepted", "restore"):
                accepted.append(w)
                disputed = disputed or verdict == "restore"
        accepted.sort(key=lambda w: w.first)  # moves apply in the order asked
        accepted, disputes, placed = settle(accepted)
        self.conflicts += [d.text(self.language) for d in disputes]
        # A step reworded since a request named it is the same step under its new text.
        reworded = {
            w.claim.subject: step_key(w.claim.step)
            for w in weighed
            if w.claim.kind == "edit" and w.claim.step is not None
        }
        accepted = [w for w in (self._follow(w, reworded) for w in accepted) if w is not None]
        edits = self._edits([w for w in accepted if w.claim.kind == "edit"])
        removes = self._removes([w for w in accepted if w.claim.kind == "drop"], edits)
        for d in disputes:  # a step added in a disputed place, and not there before: out
            key = d.steps[0]
            if d.kind == "placement" and key not in d.baseline and key in self.keys:
                i = self.keys.index(key)
                if i not in edits and i not in removes and len(removes) + 1 < len(self.steps):
                    removes[i] = d.reason(self.language)
        ops = [EditOp("edit", i, step=s, reason=r) for i, (s, r) in sorted(edits.items())]
        ops += [EditOp("remove", i, reason=r) for i, r in sorted(removes.items(), reverse=True)]
        renamed = {self.keys[i]: step_key(s) for i, (s, _) in edits.items()}
        work = [
            renamed.get(k, k) for i, k in enumerate(self.keys) if i not in removes
        ]  # keys as they stand after edits and removals
        for d in disputes:
            if d.kind == "circle":
                moves = restore_moves(work, d)
                ops += [EditOp("move", m, to=t, reason=d.reason(self.language)) for m, t in moves]
        for w in accepted:
            if w.claim.kind == "order":
                ops += self._move(work, renamed, w)
        for w in placed:  # the place most runs asked for, where an earlier place has it
            anchor = renamed.get(w.claim.anchor, w.claim.anchor)
            if (moved := place(work, w.claim.subject, anchor)) is not None:
                ops.append(EditOp("move", moved[0], to=moved[1], reason=self._reason(w)))
        for w in accepted:
            if w.claim.kind == "add" and w.claim.step is not None:
                ops += self._add(work, renamed, removes, w)
        return RevisionPlan(ops, self.conflicts, disputed=bool(disputed or disputes) and bool(ops))

    def _now(self, key: str, reworded: dict[str, str]) -> str:
        seen: set[str] = set()
        while key and key not in self.keys and key in reworded and key not in seen:
            seen.add(key)
            key = reworded[key]
        return key

    def _follow(self, w: Weighed, reworded: dict[str, str]) -> Weighed | None:
        """``w`` about the steps as they are now named; None for an addition of a step that
        is already here under a newer wording."""
        c = w.claim
        if c.kind == "add" and self._now(c.subject, reworded) in self.keys:
            return None
        done = c.step is not None and self._now(c.subject, reworded) == step_key(c.step)
        if c.kind == "edit" and done:
            return None  # reworded so already
        anchor = self._now(c.anchor, reworded) if c.anchor else ""
        subject = c.subject if c.kind == "add" else self._now(c.subject, reworded)
        moved = replace(c, subject=subject, anchor=anchor)
        return w if moved == c else replace(w, claim=moved)

    def _edits(self, asks: list[Weighed]) -> dict[int, tuple[Step, str]]:
        # Rewordings of one step compete: the most asked wins; a tie is a conflict.
        edits: dict[int, tuple[Step, str]] = {}
        for key in dict.fromkeys(w.claim.subject for w in asks):
            rivals = sorted((w for w in asks if w.claim.subject == key), key=lambda w: -len(w.runs))
            if key not in self.keys or rivals[0].claim.step is None:
                continue
            if len(rivals) > 1 and len(rivals[1].runs) == len(rivals[0].runs):
                texts = " / ".join(w.claim.describe(self.language) for w in rivals)
                self.conflicts.append(REWORDINGS(self.language, texts=texts))
                continue
            edits[self.keys.index(key)] = (rivals[0].claim.step, self._reason(rivals[0]))
        return edits

    def _removes(self, asks: list[Weighed], edits: dict[int, tuple[Step, str]]) -> dict[int, str]:
        removes: dict[int, str] = {}
        for w in asks:
            if w.claim.subject not in self.keys:
                continue
            i = self.keys.index(w.claim.subject)
            if i in edits or i in removes:
                continue
            if len(removes) + 1 < len(self.steps):  # never propose an empty SOP
                removes[i] = self._reason(w)
        return removes

    def _move(self, work: list[str], renamed: dict[str, str], w: Weighed) -> list[EditOp]:
        subject = renamed.get(w.claim.subject, w.claim.subject)
        anchor = renamed.get(w.claim.anchor, w.claim.anchor)
        if subject not in work or (anchor and anchor not in work):
            return []
        m = work.index(subject)
        if anchor:
            to = work.index(anchor)
            if m < to:
                return []  # already before it
        elif m == len(work) - 1:
            return []  # already last
        else:
            to = len(work)
        work.insert(to - 1 if m < to else to, work.pop(m))
        return [EditOp("move", m, to=work.index(subject), reason=self._reason(w))]

    def _add(
        self, work: list[str], renamed: dict[str, str], removes: dict[int, str], w: Weighed
    ) -> list[EditOp]:
        assert w.claim.step is not None
        if w.claim.subject in work:
            return []
        pos = len(work)
        if w.claim.anchor in self.keys:
            # Before the anchor, or the next original step still there if it was removed.
            for i in range(self.keys.index(w.claim.anchor), len(self.keys)):
                key = renamed.get(self.keys[i], self.keys[i])
                if i not in removes and key in work:
                    pos = work.index(key)
                    break
        elif w.claim.anchor:
            anchor = renamed.get(w.claim.anchor, w.claim.anchor)
            pos = work.index(anchor) if anchor in work else len(work)
        work.insert(pos, w.claim.subject)
        return [EditOp("add", pos, step=w.claim.step, reason=self._reason(w))]


def revision_reason(ops: Sequence[EditOp], language: str = "en") -> str:
    """One change_log line for a proposal: every op described, ``; ``-separated."""
    if not ops:
        return NO_CHANGE(language)
    joiner = "；" if language_or_default(language) == "zh" else "; "
    return joiner.join(describe(op, language) for op in ops).replace("\n", " ")
