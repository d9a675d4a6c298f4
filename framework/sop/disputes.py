"""Disputes the weighing of claims alone does not see: placements and circles of requests.

:mod:`framework.sop.claims` weighs each question on its own (``A before B`` against ``B
before A``). Two disputes span questions, and are settled here, never by who spoke first:

* **placement**: runs ask to add the same step in different places ("before 2" and "before
  4"). The place most runs ask for wins; a tie is a dispute.
* **circle**: order requests that cannot all hold (``A before B``, ``B before C``, ``C before
  A``), whoever asked them.

A dispute is reported (:meth:`Dispute.text`) and its steps are left as they were before it:
as in the version the first run that asked about them ran on (an added step that was not
there stays out; the steps of a circle keep that version's order). Pure and deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from framework.phrases import Phrase
from framework.sop.claims import Weighed, step_label, support

CIRCLE = Phrase(
    en="conflict: order requests go round in a circle ({requests}): the order of these steps "
    "stays as it was before the dispute until the people agree",
    zh="冲突：顺序要求绕成了一个圈（{requests}）："
    "这几步的顺序保持争议之前的样子，等大家意见一致再改",
)
PLACEMENT = Phrase(
    en="conflict: where to add {step}: {places}, as many runs each: left as it was before the "
    "dispute until more runs ask for one place",
    zh="冲突：{step} 加在哪里：{places}，双方运行次数相同："
    "保持争议之前的样子，等更多运行支持某一处再改",
)
BEFORE = Phrase(
    en="before {anchor} ({support})",
    zh="在 {anchor} 之前（{support}）",
)
OR = Phrase(
    en=" or ",
    zh=" 或 ",
)
REQUEST = Phrase(
    en="{claim} ({support})",
    zh="{claim}（{support}）",
)
LIST = Phrase(
    en="; ",
    zh="；",
)
RESTORED = Phrase(
    en="as it was before the dispute about the order of {steps}",
    zh="恢复到关于 {steps} 顺序的争议之前",
)
WITHDRAWN = Phrase(
    en="as it was before the dispute about where to add it",
    zh="恢复到关于在哪里加这一步的争议之前",
)


@dataclass(frozen=True, slots=True)
class Dispute:
    """Requests that cannot all be done, and the steps as they were before them."""

    kind: Literal["placement", "circle"]
    claims: tuple[Weighed, ...]
    baseline: tuple[str, ...]
    """Step keys of the version the first of these requests was made on."""

    @property
    def steps(self) -> list[str]:
        """The keys of the disputed steps (a circle's members in the baseline's order)."""
        if self.kind == "placement":
            return [self.claims[0].claim.subject]
        keys = dict.fromkeys(k for w in self.claims for k in (w.claim.subject, w.claim.anchor))
        rank = {k: i for i, k in enumerate(self.baseline)}
        return sorted(keys, key=lambda k: rank.get(k, len(rank)))

    def text(self, language: str = "en") -> str:
        """The conflict line for reviewers and the room."""
        if self.kind == "placement":
            places = OR(language).join(
                BEFORE(
                    language,
                    anchor=step_label(w.claim.anchor, language),
                    support=_support(w, language),
                )
                for w in self.claims
            )
            step = step_label(self.claims[0].claim.subject, language)
            return PLACEMENT(language, step=step, places=places)
        requests = LIST(language).join(
            REQUEST(language, claim=w.claim.describe(language), support=_support(w, language))
            for w in self.claims
        )
        return CIRCLE(language, requests=requests)

    def reason(self, language: str = "en") -> str:
        """The reason of the edit that puts the steps back as they were."""
        if self.kind == "placement":
            return WITHDRAWN(language)
        steps = ", ".join(step_label(k, language) for k in self.steps)
        return RESTORED(language, steps=steps)


def _support(w: Weighed, language: str) -> str:
    return support(len(w.runs), w.users, w.confirmed, language)


def settle(accepted: Sequence[Weighed]) -> tuple[list[Weighed], list[Dispute], list[Weighed]]:
    """The accepted claims that stand, the disputes among them (in the order asked), and the
    additions that won a contest of places (the step goes right before their anchor even if
    an earlier place already has it).

    Additions of one step in several places: the place asked in most runs stands; a tie is
    a placement dispute and none stands. Order requests in a circle: none of them stands.
    """
    standing: list[Weighed] = []
    disputes: list[Dispute] = []
    placed: list[Weighed] = []
    adds: dict[str, list[Weighed]] = {}
    for w in accepted:
        if w.claim.kind == "add":
            adds.setdefault(w.claim.subject, []).append(w)
    for rivals in adds.values():
        if len({w.claim.anchor for w in rivals}) < 2:
            standing += rivals
            continue
        rivals = sorted(rivals, key=lambda w: (-len(w.runs), w.first))
        if len(rivals[0].runs) > len(rivals[1].runs):
            standing.append(rivals[0])
            placed.append(rivals[0])
            continue
        tied = tuple(sorted((w for w in rivals if len(w.runs) == len(rivals[0].runs)),
                            key=lambda w: w.first))  # fmt: skip
        disputes.append(Dispute("placement", tied, tied[0].baseline))
    orders = [w for w in accepted if w.claim.kind == "order"]
    for members in _circles(orders):
        group = tuple(w for w in orders if {w.claim.subject, w.claim.anchor} <= members)
        disputes.append(Dispute("circle", group, min(group, key=lambda w: w.first).baseline))
    circled = {id(w) for d in disputes if d.kind == "circle" for w in d.claims}
    standing += [w for w in accepted if w.claim.kind not in ("add",) and id(w) not in circled]
    standing.sort(key=lambda w: w.first)
    disputes.sort(key=lambda d: min(w.first for w in d.claims))
    return standing, disputes, placed


def _circles(orders: Sequence[Weighed]) -> list[frozenset[str]]:
    """Groups of steps whose order requests go round (strongly connected, two or more)."""
    after: dict[str, set[str]] = {}
    for w in orders:
        if w.claim.anchor:  # "before the end" closes no circle
            after.setdefault(w.claim.subject, set()).add(w.claim.anchor)

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in after.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {k: reach(k) for k in after}
    groups: list[frozenset[str]] = []
    for key in after:
        if key not in reached[key]:
            continue
        group = frozenset({key} | {k for k in reached[key] if key in reached.get(k, set())})
        if group not in groups:
            groups.append(group)
    return groups


def place(work: list[str], subject: str, anchor: str) -> tuple[int, int] | None:
    """The move (from, to) that puts ``subject`` right before ``anchor`` (``""``: at the end)
    in ``work`` (which is updated); None when it is there already or not in ``work``."""
    if subject not in work or (anchor and anchor not in work):
        return None
    m = work.index(subject)
    work.pop(m)
    to = work.index(anchor) if anchor else len(work)
    work.insert(to, subject)
    return None if to == m else (m, to)


def restore_moves(work: list[str], dispute: Dispute) -> list[tuple[int, int]]:
    """Moves (from, to) that put a circle's steps back in the baseline's order, in the places
    they hold in ``work`` (which is updated); other steps keep their places."""
    members = set(dispute.steps)
    slots = [i for i, k in enumerate(work) if k in members]
    rank = {k: i for i, k in enumerate(dispute.baseline)}
    wanted = sorted((work[i] for i in slots), key=lambda k: rank.get(k, len(rank)))
    final = list(work)
    for slot, key in zip(slots, wanted, strict=True):
        final[slot] = key
    moves: list[tuple[int, int]] = []
    for i, key in enumerate(final):
        if work[i] != key:
            m = work.index(key)
            work.insert(i, work.pop(m))
            moves.append((m, i))
    return moves


__all__ = ["Dispute", "place", "restore_moves", "settle"]
