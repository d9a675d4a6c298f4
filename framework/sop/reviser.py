"""The rule-based reviser: structured corrections from runs -> edit operations on the SOP.

With the offline simulator, simulated users state corrections in a small structured form
(:func:`parse_correction`); :func:`propose_edits` turns the corrections of a version's runs
into :class:`~framework.sop.edits.EditOp` s that :func:`~framework.sop.edits.apply_edits`
applies, the same code path the model-driven reviser uses. Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from framework.sop.edits import EditOp, describe
from framework.sop.model import Correction, Outcome, SopVersion, Step


@dataclass(slots=True)
class _Ask:
    """One distinct correction and the runs (outcome positions) that asked for it."""

    correction: Correction
    first: int
    runs: set[int] = field(default_factory=set)


def propose_edits(current: SopVersion, outcomes: Sequence[Outcome]) -> list[EditOp]:
    """Edit ops that make ``current`` satisfy the corrections in ``outcomes``.

    Step numbers in corrections are read against ``current.steps``, so outcomes of *other*
    versions (``sop_ref`` set and not ``current.ref``) are skipped: their numbers describe
    other steps. Identical corrections are merged (counted once per run); a correction that
    ``current`` already satisfies, or that names no step, gives no op, so a fixed issue never
    produces a new edit. When corrections conflict on a step (two edits, edit vs remove),
    the one more runs asked for wins, then the first seen. Ops come in an order whose
    indices stay valid when applied in sequence: edits, removals (back to front), then
    moves and additions located by step identity. Each reason cites how many runs asked.
    """
    runs = [o for o in outcomes if o.sop_ref in ("", current.ref)]
    asks: dict[tuple[object, ...], _Ask] = {}
    for n, outcome in enumerate(runs):
        for c in outcome.corrections:
            key = (c.kind, c.step, c.speaker, _norm(c.do) if c.do else None, c.before)
            asks.setdefault(key, _Ask(c, len(asks))).runs.add(n)
    ranked = sorted(asks.values(), key=lambda a: (-len(a.runs), a.first))
    return _Planner(current.steps, len(runs)).plan(ranked)


class _Planner:
    """Resolves corrections against the steps, then emits ops in an index-safe order."""

    def __init__(self, steps: tuple[Step, ...], total: int) -> None:
        self.steps = steps
        self.total = total
        self.edits: dict[int, tuple[Step, str]] = {}
        self.removes: dict[int, str] = {}
        # (anchor original index or None for the end, first seen, mover index or new step, why)
        self.placements: list[tuple[int | None, int, int | Step, str]] = []

    def plan(self, asks: list[_Ask]) -> list[EditOp]:
        for ask in asks:
            c, why = ask.correction, self._reason(ask)
            if c.kind == "order":
                self._order(c, ask.first, why)
            elif c.kind == "missing":
                self._missing(c, ask.first, why)
            elif c.kind == "extra":
                self._extra(c, why)
            elif c.kind == "edit":
                self._edit(c, why)
        return self._emit()

    def _reason(self, ask: _Ask) -> str:
        c = ask.correction
        detail = c.detail.strip() or f"{c.kind} step {c.step or c.speaker or ''}".strip()
        noun = "run" if self.total == 1 else "runs"
        return f"{len(ask.runs)} of {self.total} {noun}: {detail}"

    def _anchor(self, before: int | None) -> int | None:
        # "before step N" for N past the end means "at the end".
        return before - 1 if before is not None and 1 <= before <= len(self.steps) else None

    def _order(self, c: Correction, first: int, why: str) -> None:
        t = self._anchor(c.before)
        found = _find(self.steps, c.step, c.speaker, c.do)
        if t is None or not found or min(found) <= t:
            return  # no anchor, no such step, or already before it
        self.placements.append((t, first, found[0], why))

    def _missing(self, c: Correction, first: int, why: str) -> None:
        if not c.speaker or not c.do or _find(self.steps, None, c.speaker, c.do):
            return  # cannot build a step without both, or it is already there
        new = Step(speakers=(c.speaker,), do=c.do.strip())
        if any(what == new for _, _, what, _ in self.placements):
            return  # the same step asked for at another place: the most-asked place wins
        self.placements.append((self._anchor(c.before), first, new, why))

    def _extra(self, c: Correction, why: str) -> None:
        found = _find(self.steps, c.step, c.speaker, c.do)
        if not found or found[0] in self.edits or found[0] in self.removes:
            return
        if len(self.removes) + 1 < len(self.steps):  # never propose an empty SOP
            self.removes[found[0]] = why

    def _edit(self, c: Correction, why: str) -> None:
        # The text in an edit is the *new* wording, so only the number locates the step.
        i = c.step - 1 if c.step is not None else -1
        if not c.do or not 0 <= i < len(self.steps) or i in self.edits or i in self.removes:
            return
        old = self.steps[i]
        if _norm(old.do) != _norm(c.do):
            self.edits[i] = (replace(old, do=c.do.strip()), why)

    def _emit(self) -> list[EditOp]:
        ops = [EditOp("edit", i, step=s, reason=w) for i, (s, w) in sorted(self.edits.items())]
        ops += [
            EditOp("remove", i, reason=w) for i, w in sorted(self.removes.items(), reverse=True)
        ]
        # Track which original step sits where; new steps get ids past the originals.
        ids: list[int] = [i for i in range(len(self.steps)) if i not in self.removes]
        end = len(self.steps)
        for anchor, _, what, why in sorted(self.placements, key=lambda p: (_key(p[0]), p[1])):
            pos = self._position(ids, anchor)
            if isinstance(what, Step):
                ops.append(EditOp("add", pos, step=what, reason=why))
                ids.insert(pos, end)
                end += 1
            elif what in ids and ids.index(what) > pos:
                m = ids.index(what)
                ops.append(EditOp("move", m, to=pos, reason=why))
                ids.insert(pos, ids.pop(m))
        return ops

    def _position(self, ids: list[int], anchor: int | None) -> int:
        # Before the anchor step, or the next original step still there if it was removed.
        if anchor is not None:
            for orig in range(anchor, len(self.steps)):
                if orig in ids:
                    return ids.index(orig)
        return len(ids)


def _key(anchor: int | None) -> int:
    return anchor if anchor is not None else 1 << 30


def _norm(text: str | None) -> str:
    return " ".join((text or "").casefold().split())


def _find(
    steps: tuple[Step, ...], number: int | None, speaker: str | None, do: str | None
) -> list[int]:
    """Indices of the steps a correction names: by content if given (number first), else by
    number."""
    if speaker or do:
        hits = [
            i
            for i, s in enumerate(steps)
            if (not speaker or speaker in s.speakers) and (not do or _norm(do) in _norm(s.do))
        ]
        if number is not None and number - 1 in hits:
            hits.remove(number - 1)
            hits.insert(0, number - 1)
        return hits
    return [number - 1] if number is not None and 1 <= number <= len(steps) else []


def revision_reason(ops: Sequence[EditOp]) -> str:
    """One change_log line for a proposal: every op described, ``; ``-separated."""
    if not ops:
        return "no change: no open corrections"
    return "; ".join(describe(op) for op in ops).replace("\n", " ")


_QUOTED = r"[\"“「『](?P<do>[^\"”」』]+)[\"”」』]"
_TAIL = r"(?:[\s:：—#-]+(?P<rest>.*))?$"
_PREFIX = re.compile(r"^\s*(?:纠正|更正|correction)\s*[:：]\s*(?P<body>.+?)\s*$", re.IGNORECASE)
_NAME = r"[^\s\"“「『]+"
_BEFORE = r"\s+before\s+(?P<before>\d+)"
_FORMS = {
    kind: re.compile(pattern + _TAIL, re.IGNORECASE)
    for kind, pattern in {
        "order": rf"order\s+(?P<subject>{_NAME}){_BEFORE}",
        "missing": rf"missing\s+(?P<speaker>{_NAME})\s+{_QUOTED}(?:{_BEFORE})?",
        "extra": r"extra\s+(?P<step>\d+)",
        "edit": rf"edit\s+(?P<step>\d+)\s+{_QUOTED}",
    }.items()
}


def parse_correction(text: str) -> Correction | None:
    """Read the structured correction a (simulated) user types in chat, or None.

    Grammar (one line; the first line with the prefix counts; keywords case-insensitive)::

        line    := prefix ("order" | "missing" | "extra" | "edit") ... [sep reason]
        prefix  := ("纠正" | "更正" | "correction") (":" | "：")
        order   := "order" (STEP | SPEAKER) "before" STEP    step/speaker's step goes before STEP
        missing := "missing" SPEAKER QUOTED ["before" STEP]   add a step (default: at the end)
        extra   := "extra" STEP                              remove step STEP
        edit    := "edit" STEP QUOTED                        step STEP should do QUOTED
        QUOTED  := text in "..." or “...” or 「...」 or 『...』;  STEP := 1-based number

    A free-text reason may follow after whitespace, ``:``, ``—``, ``-`` or ``#``; it becomes
    the correction's ``detail`` (else the structured text does). Examples:
    ``纠正: order engineer before 1 先出提纲再评估``, ``correction: missing reviewer "合规自检"
    before 4``, ``correction: extra 3``, ``correction: edit 2 "只写提纲"``. Ordinary text,
    or a prefixed line that does not fit the grammar, gives None.
    """
    for line in text.splitlines():
        head = _PREFIX.match(line)
        if head is not None:
            return _parse_body(head.group("body"))
    return None


def _parse_body(body: str) -> Correction | None:
    for kind, form in _FORMS.items():
        m = form.match(body)
        if m is None:
            continue
        g = m.groupdict()
        detail = (g.get("rest") or "").strip() or body
        before = int(g["before"]) if g.get("before") else None
        step = int(g["step"]) if g.get("step") else None
        if 0 in (before, step):
            return None  # step numbers start at 1
        if kind == "order":
            subject = g["subject"]
            if not subject.isdigit():
                return Correction("order", detail, speaker=subject, before=before)
            return (
                Correction("order", detail, step=int(subject), before=before)
                if int(subject)
                else None
            )
        if kind == "missing":
            return Correction("missing", detail, speaker=g["speaker"], do=g["do"], before=before)
        if kind == "extra":
            return Correction("extra", detail, step=step)
        return Correction("edit", detail, step=step, do=g["do"])
    return None
