"""One schedule as people see it: when it fires next, its last fires, what it missed, paused or
not. Read from ``schedules.yaml`` and the fire ledger, so it is the same whether or not a
scheduler runs in the process asking (``GET /api/schedules``, the viewer)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from framework.schedules.fires import Fire, FireStore, utc
from framework.schedules.timing import next_due
from framework.specs.schedules_file import ScheduleSpec
from framework.specs.time_fields import format_duration

__all__ = ["COUNTED", "LAST_SHOWN", "Overview", "describe_when", "overview"]

LAST_SHOWN = 5
"""How many of its latest fires a schedule's overview carries."""
COUNTED = 200
"""How many of its latest fires the outcome counts look at: enough for months of a daily
schedule, and one bounded query whatever the ledger's size (the whole history is paged with
``history``)."""


@dataclass(frozen=True, slots=True)
class Overview:
    """A schedule of ``schedules.yaml`` with what the ledger knows of it."""

    name: str
    spec: ScheduleSpec
    zone: ZoneInfo
    next_fire: datetime | None
    """Its next due time (UTC); None while paused or disabled, or when it never fires again."""
    paused_since: datetime | None
    last_fires: list[Fire]
    """Its latest fires, newest first (at most :data:`LAST_SHOWN`)."""
    outcomes: dict[str, int]
    """How many of its latest :data:`COUNTED` fires ended in each state (``missed``,
    ``failed``, ``done``, ...)."""


def describe_when(spec: ScheduleSpec) -> str:
    """``30 9 * * mon-fri`` or ``every 90m``."""
    if spec.every is not None:
        return f"every {format_duration(spec.every)}"
    return spec.cron or ""


async def overview(
    name: str,
    spec: ScheduleSpec,
    zone: ZoneInfo,
    store: FireStore,
    *,
    paused: dict[str, datetime],
    now: datetime,
) -> Overview:
    """The overview of schedule ``name`` (``paused``: :meth:`FireStore.paused`, asked once
    for every schedule)."""
    since = paused.get(name)
    upcoming = (
        next_due(spec, zone, utc(now)) if spec.enabled and since is None else None
    )  # a paused or disabled schedule fires at no time until it is resumed or enabled
    recent = await store.history(name, limit=COUNTED)
    return Overview(
        name=name,
        spec=spec,
        zone=zone,
        next_fire=upcoming,
        paused_since=since,
        last_fires=recent[:LAST_SHOWN],
        outcomes=dict(Counter(fire.state for fire in recent)),
    )
