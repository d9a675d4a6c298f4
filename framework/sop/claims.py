"""What people asked of an SOP, by step identity, weighed over every run of every version.

A correction names steps by number in the run it was made in (``纠正: order 3 before 2``).
Numbers mean other steps in another version, so each correction is first resolved against
the steps of the version it was made on into a :class:`Claim` about step *identities*: a
step's speakers and its whole text, never a part of it ("写正文" is not "写正文初稿").
Claims from all runs can then be weighed together:

* **support**: how many runs ask for a claim. A person's later request on the same question
  replaces their earlier one (a person may change their mind; the earlier run stops counting).
* **opposition**: how many runs ask for the opposite (``A before B`` against ``B before A``,
  adding a step against removing it, rewording A to B against B to A). A claim is *accepted*
  when its support reaches the threshold and is greater than its opposition. Equal support
  on both sides is a **conflict**: reported, never settled by who spoke first; the SOP goes
  back to how it was before the question was first asked (an edit the first person's run
  already made is undone) and stays so until more runs ask one way.
* **reliance**: a step is removed only when more people ask to remove it than other people
  ran a version with it without asking. One person's one-off request cannot cut a step the
  others rely on; it is *held* and reported.

Pure and deterministic: the same runs always give the same claims, in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from framework.phrases import Phrase
from framework.sop.model import Correction, Outcome, Step

__all__ = [
    "Claim",
    "Weighed",
    "norm",
    "resolve",
    "step_key",
    "step_label",
    "support",
    "weigh",
]

THE_END = Phrase(
    en="the end",
    zh="末尾",
)
ORDER = Phrase(
    en="{subject} before {anchor}",
    zh="{subject} 在 {anchor} 之前",
)
ADD = Phrase(
    en="add {subject} before {anchor}",
    zh="在 {anchor} 之前加 {subject}",
)
DROP = Phrase(
    en="remove {subject}",
    zh="去掉 {subject}",
)
REWORD = Phrase(
    en="reword {subject} as {new}",
    zh="把 {subject} 改为 {new}",
)
ONE_RUN = Phrase(
    en="1 run",
    zh="1 次运行",
)
RUNS = Phrase(
    en="{n} runs",
    zh="{n} 次运行",
)
ASKED_BY = Phrase(
    en="asked by {people}",
    zh="{people} 提出",
)
CONFIRMED_BY = Phrase(
    en="confirmed by {people}",
    zh="{people} 确认",
)
SUPPORT = Phrase(
    en="{runs}, {who}",
    zh="{runs}，{who}",
)
AND = Phrase(
    en=", ",
    zh="，",
)

ClaimKind = Literal["order", "add", "drop", "edit"]


def norm(text: str | None) -> str:
    """Casefolded with runs of whitespace as one space: the text part of a step's identity."""
    return " ".join((text or "").casefold().split())


def step_key(step: Step) -> str:
    """A step's identity: its speakers and its whole text (``pm|立题与提纲``)."""
    return f"{'/'.join(step.speakers)}|{norm(step.do)}"


def step_label(key: str, language: str = "en") -> str:
    """A key as people read it: ``pm: 立题与提纲`` (``the end`` for the empty anchor)."""
    who, _, do = key.partition("|")
    return f"{who}: {do}" if key else THE_END(language)


@dataclass(frozen=True, slots=True)
class Claim:
    """One thing asked of the SOP, about step identities.

    ``order``: ``subject`` should come right before ``anchor`` (``""``: at the end).
    ``add``: the new ``step`` (key ``subject``) should exist, right before ``anchor``.
    ``drop``: ``subject`` should go. ``edit``: ``subject`` should become ``step``.
    """

    kind: ClaimKind
    subject: str
    anchor: str = ""
    step: Step | None = None
    detail: str = ""

    @property
    def question(self) -> tuple[str, ...]:
        """What a claim and its opposite both answer (and a person's later claim replaces)."""
        if self.kind == "order":
            return ("order", *sorted((self.subject, self.anchor)))
        if self.kind in ("add", "drop"):
            return ("exists", self.subject)
        new = step_key(self.step) if self.step is not None else ""
        return ("edit", *sorted((self.subject, new)))

    @property
    def identity(self) -> tuple[str, ...]:
        """Claims asking the same thing (the place an added step goes is part of it)."""
        new = step_key(self.step) if self.step is not None else ""
        return (self.kind, self.subject, self.anchor if self.kind != "drop" else "", new)

    def opposes(self, other: Claim) -> bool:
        """Whether ``other`` asks for the opposite of this claim."""
        if self.question != other.question or self.identity == other.identity:
            return False
        if self.kind == "order":
            return other.kind == "order" and other.subject == self.anchor != ""
        if self.kind in ("add", "drop"):
            return {self.kind, other.kind} == {"add", "drop"}
        return other.kind == "edit"

    def describe(self, language: str = "en") -> str:
        """One line for people: ``pm: 汇总定稿 before reviewer: 合规自检``."""
        subject = step_label(self.subject, language)
        anchor = step_label(self.anchor, language)
        if self.kind == "order":
            return ORDER(language, subject=subject, anchor=anchor)
        if self.kind == "add":
            return ADD(language, subject=subject, anchor=anchor)
        if self.kind == "drop":
            return DROP(language, subject=subject)
        new = step_label(step_key(self.step), language) if self.step is not None else "?"
        return REWORD(language, subject=subject, new=new)


def _by_number(steps: Sequence[Step], n: int | None) -> Step | None:
    return steps[n - 1] if n is not None and 1 <= n <= len(steps) else None


def _named(steps: Sequence[Step], c: Correction) -> Step | None:
    """The step a correction is about: by number, else by its whole text, else by speaker
    (the speaker's first step after the anchor, which is the one out of place)."""
    if c.step is not None:
        return _by_number(steps, c.step)
    if c.do:
        hits = [s for s in steps if norm(s.do) == norm(c.do)]
        hits = [s for s in hits if not c.speaker or c.speaker in s.speakers] or hits
        return hits[0] if hits else None
    if c.speaker:
        mine = [i for i, s in enumerate(steps) if c.speaker in s.speakers]
        after = [i for i in mine if c.before is None or i > c.before - 1]
        return steps[(after or mine)[0]] if mine else None
    return None


def _anchor(steps: Sequence[Step], before: int | None) -> str:
    step = _by_number(steps, before)
    return step_key(step) if step is not None else ""


def resolve(c: Correction, steps: Sequence[Step]) -> Claim | None:
    """The claim a correction makes about ``steps`` (the version it was made on), or None
    when it names no step there (or, for ``missing``, lacks the speaker or the text)."""
    if c.kind == "missing":
        if not c.speaker or not c.do:
            return None
        new = Step(speakers=(c.speaker,), do=c.do.strip())
        return Claim("add", step_key(new), _anchor(steps, c.before), new, c.detail)
    if c.kind == "edit":
        old = _by_number(steps, c.step)
        if old is None or not c.do or norm(c.do) == norm(old.do):
            return None
        return Claim("edit", step_key(old), step=replace(old, do=c.do.strip()), detail=c.detail)
    subject = _named(steps, c)
    if subject is None:
        return None
    if c.kind == "extra":
        return Claim("drop", step_key(subject), detail=c.detail)
    if c.kind == "order":
        anchor = _anchor(steps, c.before)
        if anchor == step_key(subject):
            return None
        return Claim("order", step_key(subject), anchor, detail=c.detail)
    return None


@dataclass(slots=True)
class Weighed:
    """A claim with the runs for and against it (run positions in the pooled list)."""

    claim: Claim
    first: int
    runs: set[int] = field(default_factory=set)
    users: set[str] = field(default_factory=set)
    against: set[int] = field(default_factory=set)
    relying: set[str] = field(default_factory=set)
    """For a removal: other people who ran a version with the step and did not ask."""
    restores: bool = False
    """Whether doing it gives back what the SOP had before anyone asked this question (the
    version of the first run that asked it): the side a tie falls back to."""
    confirmed: set[str] = field(default_factory=set)
    """Of ``users``, those whose say was a free remark they confirmed (not typed)."""
    baseline: tuple[str, ...] = ()
    """The step keys of the version the first run that asked this question ran on: the SOP
    as it was before any dispute about it."""

    def verdict(self, threshold: int) -> Literal["accepted", "conflict", "restore", "held", "weak"]:
        """``accepted``: do it; ``conflict``: as many runs ask the opposite (``restore``: and
        this side is how the SOP was before the dispute, so it is what stands); ``held``: a
        removal others rely on; ``weak``: fewer runs than the threshold, or than ask the
        opposite."""
        if len(self.runs) == len(self.against) and self.runs:
            return "restore" if self.restores else "conflict"
        if len(self.runs) < threshold or len(self.runs) < len(self.against):
            return "weak"
        others = self.relying - self.users
        if self.claim.kind == "drop" and others and len(self.users) <= len(others):
            return "held"
        return "accepted"


def weigh(
    outcomes: Sequence[Outcome],
    steps_of: Mapping[str, Sequence[Step]],
    current_ref: str,
) -> list[Weighed]:
    """Every distinct claim the runs make, first asked first, with its support and opposition.

    ``steps_of`` maps a version ref to its steps; an outcome of a version not in it is skipped
    (its numbers cannot be read). An outcome with no ref is read against ``current_ref``.
    """
    asked: list[tuple[int, str, Claim, bool]] = []
    for n, outcome in enumerate(outcomes):
        steps = steps_of.get(outcome.sop_ref or current_ref)
        if steps is None:
            continue
        for c in outcome.corrections:
            claim = resolve(c, steps)
            if claim is not None:
                asked.append((n, c.by or outcome.user, claim, c.confirmed))
    table: dict[tuple[str, ...], Weighed] = {}
    baseline: dict[tuple[str, ...], Sequence[Step]] = {}  # question -> steps when first asked
    for i, (n, who, claim, confirmed) in enumerate(asked):
        baseline.setdefault(claim.question, steps_of[outcomes[n].sop_ref or current_ref])
        if who and any(w == who and _same_say(claim, c) for _, w, c, _ in asked[i + 1 :]):
            continue  # this person said it again later (even in the same run): that stands
        entry = table.setdefault(claim.identity, Weighed(claim, n))
        entry.runs.add(n)
        if who:
            entry.users.add(who)
            if confirmed:
                entry.confirmed.add(who)
    for entry in table.values():
        first = baseline[entry.claim.question]
        entry.baseline = tuple(step_key(s) for s in first)
        entry.restores = _holds(entry.claim, first)
        for other in table.values():
            if entry.claim.opposes(other.claim):
                entry.against |= other.runs
        if entry.claim.kind == "drop":
            entry.relying = _relying(entry.claim.subject, outcomes, steps_of, current_ref)
    return sorted(table.values(), key=lambda w: w.first)


def _same_say(a: Claim, b: Claim) -> bool:
    """Whether ``b`` answers what ``a`` asked (so a person's later ``b`` replaces ``a``): the
    same question, or two rewordings of the same step."""
    return a.question == b.question or (a.kind == b.kind == "edit" and a.subject == b.subject)


def _holds(claim: Claim, steps: Sequence[Step]) -> bool:
    """Whether ``steps`` already are as ``claim`` asks."""
    keys = [step_key(s) for s in steps]
    if claim.kind == "order":
        if claim.subject not in keys:
            return False
        if not claim.anchor:
            return keys[-1] == claim.subject
        return claim.anchor in keys and keys.index(claim.subject) < keys.index(claim.anchor)
    if claim.kind == "add":
        return claim.subject in keys
    if claim.kind == "drop":
        return claim.subject not in keys
    return claim.step is not None and step_key(claim.step) in keys


def _relying(
    key: str, outcomes: Sequence[Outcome], steps_of: Mapping[str, Sequence[Step]], current: str
) -> set[str]:
    """People who ran a version that had step ``key`` and did not ask to remove it."""
    relying: set[str] = set()
    for outcome in outcomes:
        steps = steps_of.get(outcome.sop_ref or current)
        if steps is None or not outcome.user or key not in {step_key(s) for s in steps}:
            continue
        dropped = (resolve(c, steps) for c in outcome.corrections if c.kind == "extra")
        if not any(d is not None and d.subject == key for d in dropped):
            relying.add(outcome.user)
    return relying


def support(runs: int, users: set[str], confirmed: set[str], language: str = "en") -> str:
    """What happened, counted: ``1 run, confirmed by maria`` / ``2 runs, asked by bob``
    (``asked`` for corrections typed in the structured form, ``confirmed`` for free remarks
    their person confirmed; a person who did both is named once, as asking)."""
    counted = ONE_RUN(language) if runs == 1 else RUNS(language, n=runs)
    typed = sorted(users - confirmed)
    said = sorted(confirmed - set(typed))
    who = [ASKED_BY(language, people=", ".join(typed))] if typed else []
    if said:
        who.append(CONFIRMED_BY(language, people=", ".join(said)))
    return SUPPORT(language, runs=counted, who=AND(language).join(who)) if who else counted
