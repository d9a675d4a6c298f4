"""What a room reports about itself: its status between runs, and what a rebuild did."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RoomStatus:
    """Where a room stands between runs."""

    entered: bool
    phase: str | None
    """``sop`` while following its SOP, ``open`` after it (free chat), None before entry."""
    waiting: bool
    """True when the room is paused for human input."""
    waiting_for: list[str]
    step: int
    """SOP steps done: the 0-based index of the next step to run (the checkpoint's ``step``)."""
    steps_total: int
    turns: int
    sop: str | None
    stop_reason: str | None
    wait_reason: str | None = None
    """Why it waits: ``waits_for_input`` (a step asks people), ``model_error`` or
    ``interrupted`` (a newer message stopped the run: it goes on next). Never for a
    confirmation: a remark read as a correction is confirmed later, while the run goes on."""
    error: str | None = None
    """With ``model_error``: what failed and what to check (then :meth:`Room.retry`)."""

    def to_dict(self) -> dict[str, Any]:
        """The status as plain JSON data."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class RebuildReport:
    """What :meth:`Room.rebuild` found and did."""

    room: str
    problem: str | None
    """What was wrong before (None: checkpoint and log agreed; rebuilt anyway)."""
    resumed_at: str
    """``human`` (waits for people), ``route`` (its run goes on at the next start),
    ``end`` (idle, free chat) or ``reset`` (no entry in the log: it enters afresh)."""
    from_event: str | None
    unrouted: list[str]
    """Human messages stored after that pause but never answered: post them again."""
