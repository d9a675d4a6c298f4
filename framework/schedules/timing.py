"""When a schedule is due: cron in the schedule's time zone, intervals in UTC, and what a tick
does with due times that passed (missed-run policy). Pure: no clock, no I/O, so a simulated
clock drives it exactly as the real one does.

Every instant in and out is a UTC-aware datetime. Cron is evaluated on the local wall clock of
the schedule's zone, with one rule for daylight-saving changes:

- a local time that does not exist (spring forward) fires at the first instant after the gap
  (02:30 on a 02:00->03:00 day fires at 03:00 local);
- a local time that occurs twice (fall back) fires once, at its first occurrence.

cronsim alone follows Debian cron instead: an expression whose minute or hour field starts
with ``*`` (``0 * * * *``, ``*/15 * * * *``) runs in elapsed time, so it fires the repeated
hour twice. Here cronsim only walks the naive wall clock and the rule above turns each wall
time into one instant, for every expression alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from cronsim import CronSim

from framework.specs.schedules_file import SchedulesFile, ScheduleSpec, render_template

RunKind = Literal["due", "catchup"]
MissedPolicy = Literal["skip", "once", "all"]
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
"""Anchor of an interval schedule without ``start_at``."""


def zone_of(spec: ScheduleSpec, file: SchedulesFile, project_tz: str | None) -> ZoneInfo:
    """The schedule's zone: its own ``timezone``, else the file's, else the project's
    (``staffroom.yaml``), else UTC. The names were checked when the files were loaded."""
    return ZoneInfo(spec.timezone or file.timezone or project_tz or "UTC")


def local_instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant of the naive local time ``wall`` in ``zone``, by the DST rule: a time
    in a gap is the first instant after it, a repeated time its first occurrence."""
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if first.astimezone(zone).replace(tzinfo=None) == wall.replace(tzinfo=None):
        return first  # exists; fold=0 is the earlier of two occurrences
    # In a gap, fold=0 reads the wall time with the offset from before the change and fold=1
    # with the one after: the change lies between the two instants. Find its second.
    low = int(wall.replace(tzinfo=zone, fold=1).astimezone(UTC).timestamp())
    high = int(first.timestamp())
    after = first.astimezone(zone).utcoffset()
    while high - low > 1:
        mid = (low + high) // 2
        if datetime.fromtimestamp(mid, UTC).astimezone(zone).utcoffset() == after:
            high = mid
        else:
            low = mid
    return datetime.fromtimestamp(high, UTC)


def _aware(value: datetime, name: str) -> datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware (UTC), got {value!r}")
    return value.astimezone(UTC)


def interval_anchor(spec: ScheduleSpec, zone: ZoneInfo) -> datetime:
    """Where an interval schedule counts from: ``start_at`` (read in ``zone`` when it has no
    offset), else 1970-01-01T00:00Z."""
    if spec.start_at is None:
        return EPOCH
    if spec.start_at.tzinfo is None:
        return local_instant(spec.start_at, zone)
    return spec.start_at.astimezone(UTC)


def iter_due(spec: ScheduleSpec, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Every due instant strictly after ``after``, in order (endless for most schedules)."""
    after = _aware(after, "after")
    if spec.every is not None:
        anchor, step = interval_anchor(spec, zone), spec.every
        k = 0 if after < anchor else (after - anchor) // step + 1
        while True:
            yield anchor + k * step
            k += 1
    assert spec.cron is not None  # the card holds exactly one of cron and every
    last = after
    # Wall times up to after's own map to instants <= after (the mapping keeps order), so
    # the walk starts there; cronsim yields naive times strictly later.
    for wall in CronSim(spec.cron, after.astimezone(zone).replace(tzinfo=None)):
        instant = local_instant(wall, zone)
        if instant > last:  # several gap times land on one instant: it fires once
            last = instant
            yield instant


def due_times(
    spec: ScheduleSpec,
    zone: ZoneInfo,
    after: datetime,
    until: datetime,
    *,
    limit: int | None = None,
) -> list[datetime]:
    """Due instants (UTC) strictly after ``after`` and at or before ``until``, in order; at
    most ``limit`` of them (the earliest)."""
    until = _aware(until, "until")
    found: list[datetime] = []
    for due in iter_due(spec, zone, after):
        if due > until or (limit is not None and len(found) >= limit):
            break
        found.append(due)
    return found


def next_due(spec: ScheduleSpec, zone: ZoneInfo, after: datetime) -> datetime | None:
    """The first due instant strictly after ``after``; None when the expression never
    matches again (cronsim gives up after 50 years). ``enabled`` is not considered."""
    return next(iter_due(spec, zone, after), None)


def fire_id(schedule: str, due: datetime) -> str:
    """The fire's id: ``standup@2026-03-30T07:30:00Z`` (the due time in UTC)."""
    return f"{schedule}@{_aware(due, 'due'):%Y-%m-%dT%H:%M:%SZ}"


def run_now_id(schedule: str, token: str) -> str:
    """The id of a run-now fire: ``standup@now-<token>`` (one token, one run)."""
    return f"{schedule}@now-{token}"


@dataclass(frozen=True, slots=True)
class Classified:
    """What a tick does with the due times it found: run these, record those as missed."""

    run: list[tuple[datetime, RunKind]] = field(default_factory=list)
    """Fires to run, oldest first: ``due`` (on time) or ``catchup`` (a missed one run late)."""
    missed: list[datetime] = field(default_factory=list)
    """Due times recorded as missed (reported, not run), oldest first."""


def classify(
    due_list: list[datetime],
    now: datetime,
    grace: timedelta,
    policy: MissedPolicy,
    cap: int,
) -> Classified:
    """Sort due times into on time (``now - due <= grace``) and missed, then apply the
    policy to the missed ones: ``skip`` runs none, ``once`` the latest, ``all`` the latest
    ``cap`` (each in order); the others are recorded missed."""
    now = _aware(now, "now")
    ordered = sorted({_aware(d, "due") for d in due_list})
    on_time = [d for d in ordered if now - d <= grace]
    late = [d for d in ordered if now - d > grace]
    keep = {"skip": 0, "once": 1, "all": max(cap, 0)}[policy]
    caught = late[len(late) - keep :] if keep else []
    missed = late[: len(late) - len(caught)]
    run: list[tuple[datetime, RunKind]] = [(d, "catchup") for d in caught]
    run += [(d, "due") for d in on_time]
    return Classified(run=run, missed=missed)


def render_room_id(template: str, due: datetime, zone: ZoneInfo, schedule: str) -> str:
    """The room id a fire opens: ``{date}`` / ``{time}`` are the due time's local
    ``YYYY-MM-DD`` / ``HHMM`` in ``zone``, ``{schedule}`` the schedule's id."""
    local = _aware(due, "due").astimezone(zone)
    return render_template(template, schedule, f"{local:%Y-%m-%d}", f"{local:%H%M}")


def reflection_due(day: date, at: time, zone: ZoneInfo) -> datetime:
    """When a reflection trigger due on ``day`` fires: ``at`` on that day in ``zone``, as a
    UTC instant (the same DST rule as cron)."""
    return local_instant(datetime.combine(day, at.replace(tzinfo=None)), zone)


__all__ = [
    "EPOCH",
    "Classified",
    "MissedPolicy",
    "RunKind",
    "classify",
    "due_times",
    "fire_id",
    "interval_anchor",
    "iter_due",
    "local_instant",
    "next_due",
    "reflection_due",
    "render_room_id",
    "run_now_id",
    "zone_of",
]
