"""SOP data inside Staffroom: immutable versions, steps, reviews and outcomes (plain data).

The edge format is the SOP card (``framework/specs/sop_card.py``); the store
(``framework/sop/store.py``) persists these, in the stored forms at the end of this module;
scoring, edits and revision are pure functions over them. :class:`Step` is defined with the
card's step in ``framework/specs/step.py`` (rendering reads it there) and is this module's too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal

from framework.specs.step import Step as Step  # re-exported: the SOP layer reads it from here


class Status(StrEnum):
    """Review status of a version."""

    DRAFT = "draft"
    PUBLISHED = "published"
    DEPRECATED = "deprecated"


@dataclass(frozen=True, slots=True)
class ChangeLogEntry:
    """Why a version exists: what changed, why, and from which run or by whom."""

    version: int
    why: str
    by: str | None = None
    source: str | None = None
    """The run (session key) or file the evidence came from."""


@dataclass(frozen=True, slots=True)
class Approval:
    """A reviewer's approval of a draft."""

    reviewer: str
    at: str
    note: str | None = None


@dataclass(frozen=True, slots=True)
class SopVersion:
    """One immutable version of an SOP. Editing makes a new version; this one never changes."""

    sop_id: str
    version: int
    goal: str
    scope: str
    """``scenario:<id>``, ``employee:<id>`` or ``global``."""
    steps: tuple[Step, ...]
    status: Status = Status.DRAFT
    change_log: tuple[ChangeLogEntry, ...] = ()
    approvals: tuple[Approval, ...] = ()
    created_at: str = ""
    body: str = ""

    @property
    def ref(self) -> str:
        """``id@version``."""
        return f"{self.sop_id}@{self.version}"


CorrectionKind = Literal["order", "missing", "extra", "edit"]


@dataclass(frozen=True, slots=True)
class Correction:
    """A person's (or model's) correction of a run, tied to the step it concerns."""

    kind: CorrectionKind
    detail: str
    step: int | None = None
    """1-based step number it concerns (None: the whole procedure)."""
    by: str = ""
    speaker: str | None = None
    """For ``missing``/``order``: whose step."""
    do: str | None = None
    """For ``missing``: what the missing step does."""
    before: int | None = None
    """For ``order``/``missing``: the step number it should come before."""
    confirmed: bool = field(default=False, compare=False)
    """True when it was read from a person's free remark and that person confirmed it (not
    typed in the structured form): the reason of an edit says "confirmed by" them. Not part
    of what the correction asks, so left out of equality."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one run of a version went, stored against that version."""

    sop_ref: str
    session: str
    success: bool
    """False whenever ``failures`` is not empty; otherwise the person's stated score when
    given, else: the SOP completed and nobody corrected it."""
    score: float | None = None
    """0..1 from the user, if given."""
    corrections: tuple[Correction, ...] = ()
    duration_s: float = 0.0
    off_sop_turns: int = 0
    human_interventions: int = 0
    user: str = ""
    at: str = ""
    failures: tuple[str, ...] = ()
    """Why the run lacks evidence of work, one reason each ("step 1 (pm) did not produce
    outline.md", "engineer's reply at step 2 was empty"); any one makes the run fail."""


@dataclass(frozen=True, slots=True)
class VersionMetrics:
    """Run metrics of one version, aggregated from outcomes and room events."""

    references: int = 0
    runs: int = 0
    successes: int = 0
    corrections: int = 0
    mean_duration_s: float = 0.0
    replaced: int = 0
    """Times a run on this version led to a newer version."""
    hit_rate_by_user: dict[str, float] = field(default_factory=dict)
    """Per user: share of that user's runs that succeeded without corrections."""
    last_used: str = ""


def same_content(a: SopVersion, b: SopVersion) -> bool:
    """True if two versions describe the same procedure (goal, scope, steps, body).

    Status, approvals and change_log are left out on purpose: they change over a version's
    life (review, deprecation) while the procedure itself never does.
    """
    return (a.goal, a.scope, a.steps, a.body.strip()) == (b.goal, b.scope, b.steps, b.body.strip())


def steps_json(steps: Sequence[Step]) -> str:
    """The stored form of ``steps`` (the store's ``steps`` column): a JSON list of objects."""
    # A step without products is stored as before products existed, so the rows of such
    # versions stay readable by older code sharing the data folder.
    rows = [{k: v for k, v in asdict(s).items() if k != "produces" or v} for s in steps]
    return json.dumps(rows, ensure_ascii=False)


def step_from_row(item: dict[str, Any]) -> Step:
    """One step of :func:`steps_json`'s list, read back."""
    lists = {k: tuple(item.get(k, ())) for k in ("speakers", "tools", "produces")}
    return Step(**{**item, **lists})


_CORRECTION_FIELDS = frozenset(Correction.__dataclass_fields__)


def outcome_row(outcome: Outcome) -> dict[str, Any]:
    """The stored form of ``outcome`` (a row of the store's ``outcomes`` table)."""
    row = {**asdict(outcome), "success": int(outcome.success)}
    # asdict gives dicts; ``confirmed`` only when set, so older readers of the file can
    # still build their Correction from the row.
    said = [{k: v for k, v in c.items() if k != "confirmed" or v} for c in row["corrections"]]
    row["corrections"] = json.dumps(said, ensure_ascii=False)
    row["failures"] = json.dumps(row["failures"], ensure_ascii=False)
    return row


def outcome_from_row(row: dict[str, Any]) -> Outcome:
    """:func:`outcome_row`'s row read back (its ``id`` column is the store's own)."""
    return Outcome(
        **{
            **{k: v for k, v in row.items() if k != "id"},
            "success": bool(row["success"]),
            "corrections": tuple(_correction(c) for c in json.loads(row["corrections"])),
            "failures": tuple(json.loads(row["failures"])),
        }
    )


def _correction(row: dict[str, Any]) -> Correction:
    # A field a newer version added is left out rather than failing the read.
    return Correction(**{k: v for k, v in row.items() if k in _CORRECTION_FIELDS})
