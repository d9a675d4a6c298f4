"""The entry event: the ``plan`` event a room's run starts with (``meta.entry``).

Every run of a room begins with one; its ``meta`` holds the run's epoch (the prefix of the
ids its events get), the SOP version and the steps taken at entry. Old logs also hold
feedback and extractions as ``plan`` events, which are no entry: look entries up here, never
by ``kind == PLAN`` alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import EntryPayload, payload_of


def is_entry(event: Event) -> bool:
    """Whether ``event`` is a room's entry: the ``plan`` event an epoch starts with (not the
    feedback or extraction old logs also wrote as ``plan``)."""
    return event.kind == EventKind.PLAN and bool(event.meta.get("entry"))


@dataclass(frozen=True, slots=True)
class EntryMeta:
    """What an entry event's ``meta`` records about the run it starts."""

    epoch: str | None
    """The run's epoch: the prefix of the ids of the events it writes."""
    sop: str | None
    steps: list[Any] | None
    """The SOP steps taken at entry (step dicts); None in logs from before entries recorded
    them."""
    on_trial: bool = False
    """Whether the room runs ``sop`` as a trial beside the best version (``sop_trial``)."""


def entry_meta(event: Event) -> EntryMeta:
    """The run facts in an entry event's ``meta`` (lenient, like :func:`payload_of`)."""
    epoch, sop, steps = (event.meta.get(k) for k in ("epoch", "sop", "steps"))
    return EntryMeta(
        None if epoch is None else str(epoch),
        sop if isinstance(sop, str) else None,
        list(steps) if isinstance(steps, list) else None,
        bool(event.meta.get("sop_trial")),
    )


def scenario_of(entry: Event | None) -> str | None:
    """The scenario id an entry event names (None without an entry, or when it names none)."""
    entered = payload_of(entry) if entry is not None else None
    return entered.scenario if isinstance(entered, EntryPayload) else None


def first_entry(events: Iterable[Event]) -> Event | None:
    """The first entry event in ``events`` (see :func:`is_entry`), or None."""
    return next((e for e in events if is_entry(e)), None)


def last_entry(events: Sequence[Event]) -> Event | None:
    """The last entry event in ``events``: the current run's, or None."""
    return next((e for e in reversed(events) if is_entry(e)), None)
