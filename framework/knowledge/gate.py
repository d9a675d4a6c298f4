"""The self-check gate: a second look when a first extraction pass found implausibly little
(or much).

The seed's lesson: extraction, not storage, is the bottleneck. One pass over a two-page
retrospective found one item in one category; asked to check itself ("is this plausible for
this input?") it found eight in four. The gate asks that question with rules, and re-scans
when any says no:

- a rich input with no ``knowledge`` item;
- a retrospective with no ``decision``;
- a rich input where only one category was found;
- a count outside the band expected for the input's length (the seed: 5-15 items for a
  two-page retrospective), too few or too many.

Every run records whether the gate fired, why, and what the re-scan changed.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from framework.knowledge.items import Category, Item, categories_of, dedupe

RICH_CHARS = 600
"""An input at least this long is rich: it should yield knowledge and several categories."""
PAGE_CHARS = 1000
"""Characters of a page (a dense Chinese page holds about this many)."""

_RETROSPECTIVE = re.compile(r"复盘|回顾|总结|retro(spective)?|post-?mortem|lessons learned", re.I)


@dataclass(frozen=True, slots=True)
class ExtractionInput:
    """What one pass reads: an employee's new journal entries and the session's messages."""

    employee: str
    session: str
    text: str
    retrospective: bool | None = None
    """None: decided from the text (复盘, retrospective, postmortem, ...)."""

    @property
    def is_retrospective(self) -> bool:
        """Whether the input is a retrospective (which must yield decisions)."""
        if self.retrospective is not None:
            return self.retrospective
        return bool(_RETROSPECTIVE.search(self.text))

    @property
    def rich(self) -> bool:
        """Long enough that one category, or no knowledge, is implausible."""
        return len(self.text) >= RICH_CHARS


@dataclass(frozen=True, slots=True)
class Rescan:
    """What the second pass is told: why the first looked implausible, what it found."""

    reasons: list[str]
    found: list[Item]


@dataclass(frozen=True, slots=True)
class Pass:
    """One extraction pass's result."""

    items: list[Item]
    by: str
    """Who extracted: a model's label, or ``rules (offline simulator)``."""
    fallback: str | None = None
    """Why the rules stood in for the model on this pass (None: they did not)."""


Extractor = Callable[[ExtractionInput, Rescan | None], Awaitable[Pass]]
"""A pass: the input, and for a re-scan what the gate said; returns the items found."""


def expected_band(chars: int) -> tuple[int, int]:
    """How many items an input of ``chars`` characters plausibly holds (low, high).

    Scaled from the seed's 5-15 for a two-page retrospective: 2.5-7.5 a page, at least 1-4.
    """
    pages = chars / PAGE_CHARS
    return max(1, round(2.5 * pages)), max(4, round(7.5 * pages))


def gate_reasons(source: ExtractionInput, items: list[Item]) -> list[str]:
    """Why ``items`` look implausible for ``source`` (empty: plausible)."""
    reasons: list[str] = []
    found = categories_of(items)
    if source.rich and "knowledge" not in found:
        reasons.append("a rich input gave no knowledge item")
    if source.is_retrospective and "decision" not in found:
        reasons.append("a retrospective gave no decision")
    if source.rich and len(found) == 1:
        reasons.append(f"only one category was found ({found[0]})")
    low, high = expected_band(len(source.text))
    if len(items) < low:
        reasons.append(f"{len(items)} items, fewer than the {low}-{high} expected for its length")
    elif len(items) > high:
        reasons.append(f"{len(items)} items, more than the {low}-{high} expected for its length")
    return reasons


@dataclass(frozen=True, slots=True)
class GateRecord:
    """What the gate decided for one run, and what the re-scan changed."""

    fired: bool
    reasons: list[str] = field(default_factory=list)
    before: dict[Category, int] = field(default_factory=dict)
    """Items per category after the first pass."""
    after: dict[Category, int] = field(default_factory=dict)
    """Items per category kept (the same as ``before`` when the gate did not fire)."""
    added: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    still: list[str] = field(default_factory=list)
    """What the gate still found implausible after the re-scan (said, not hidden)."""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (for the run's event)."""
        return {
            "fired": self.fired,
            "reasons": list(self.reasons),
            "before": dict(self.before),
            "after": dict(self.after),
            "added": list(self.added),
            "dropped": list(self.dropped),
            "still": list(self.still),
        }


@dataclass(frozen=True, slots=True)
class ExtractionRun:
    """The items one extraction run keeps, who found them, and the gate's record."""

    items: list[Item]
    gate: GateRecord
    by: list[str]
    fallbacks: list[str]


def _counts(items: list[Item]) -> dict[Category, int]:
    counts: dict[Category, int] = {}
    for item in items:
        counts[item.category] = counts.get(item.category, 0) + 1
    return {c: counts[c] for c in categories_of(items)}


async def extract(
    source: ExtractionInput, extractor: Extractor, *, gate: bool = True
) -> ExtractionRun:
    """One extraction run: a pass, the gate, and a re-scan when the gate fires.

    A re-scan after "too many" replaces the first pass's items (it was asked to merge and
    keep what matters); otherwise its items are added to the first pass's, without repeats.
    """
    first = await extractor(source, None)
    items = dedupe(first.items)
    fallbacks = [first.fallback] if first.fallback else []
    reasons = gate_reasons(source, items) if gate else []
    if not reasons:
        record = GateRecord(False, before=_counts(items), after=_counts(items))
        return ExtractionRun(items, record, [first.by], fallbacks)
    second = await extractor(source, Rescan(reasons, items))
    if second.fallback:
        fallbacks.append(second.fallback)
    too_many = any("more than" in r for r in reasons)
    kept = dedupe(second.items) if too_many else dedupe([*items, *second.items])
    before_keys = {i.key for i in items}
    kept_keys = {i.key for i in kept}
    record = GateRecord(
        True,
        reasons,
        before=_counts(items),
        after=_counts(kept),
        added=[f"{i.category}: {i.text}" for i in kept if i.key not in before_keys],
        dropped=[f"{i.category}: {i.text}" for i in items if i.key not in kept_keys],
        still=gate_reasons(source, kept),
    )
    return ExtractionRun(kept, record, [first.by, second.by], fallbacks)
