"""What ``/api/schedules`` answers: schedules, fires and heartbeats as JSON, with instants in
UTC and on each schedule's local clock (routes_schedules.py serves them)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from pydantic import BaseModel, Field

from framework.schedules.fire_store import Fire
from framework.schedules.health import Beat
from framework.schedules.overview import Overview, describe_when


class Moment(BaseModel):
    """An instant in UTC and on the schedule's local clock."""

    utc: str = Field(examples=["2026-03-30T07:30:00Z"])
    local: str = Field(examples=["2026-03-30T09:30:00+02:00"])


class FireOut(BaseModel):
    """One fire of a schedule, as the ledger holds it."""

    fire_id: str = Field(examples=["standup@2026-03-30T07:30:00Z"])
    schedule: str
    due: Moment
    kind: str = Field(description="due | catchup | run_now | builtin")
    state: str = Field(description="running | done | quiet | failed | missed | skipped")
    detail: str = Field(description="the error, why it was missed or skipped, or a summary")
    session: str | None = Field(description="the room or DM it ran in, once known")
    attempts: int
    started: str | None
    finished: str | None


class ScheduleOut(BaseModel):
    """A schedule of schedules.yaml and what the ledger knows of it."""

    name: str
    when: str = Field(examples=["30 9 * * mon-fri", "every 90m"])
    cron: str | None
    every: str | None
    zone: str = Field(examples=["Europe/Berlin"])
    enabled: bool
    paused: bool
    paused_since: Moment | None
    next_fire: Moment | None = Field(description="null while paused or disabled")
    last_fires: list[FireOut] = Field(description="the latest fires, newest first")
    missed: int = Field(description="missed fires among its latest 200")
    outcomes: dict[str, int] = Field(description="its latest 200 fires, counted by state")


class BeatOut(BaseModel):
    """A scheduler's last heartbeat."""

    owner: str
    host: str
    pid: int
    since: str
    last: str
    age_s: float
    stalled: bool = Field(description="no beat for over 60 s: hung, or stopped")


class SchedulerOut(BaseModel):
    """The schedulers: this server's, and every one that beats in the ledger."""

    runs_here: bool = Field(description="false: served with --no-schedules")
    health: str | None = Field(description="this server's: ok | stalled | starting | null")
    heartbeats: list[BeatOut]


class ScheduleList(BaseModel):
    """Every schedule of schedules.yaml."""

    schedules: list[ScheduleOut]
    file_error: str | None = Field(
        description="why schedules.yaml does not load (the last good version stays in force "
        "where a scheduler already read it)"
    )
    scheduler: SchedulerOut


class HistoryOut(BaseModel):
    """A schedule's fires, newest first."""

    schedule: str
    fires: list[FireOut]


class RunNowOut(BaseModel):
    """The run-now fire; ``duplicate``: it was started before under this id."""

    fire: FireOut
    duplicate: bool
    message: str


def moment(when: datetime, zone: ZoneInfo) -> Moment:
    """``when`` in UTC and on ``zone``'s clock."""
    at = when.astimezone(UTC)
    return Moment(utc=at.strftime("%Y-%m-%dT%H:%M:%SZ"), local=at.astimezone(zone).isoformat())


def iso(when: datetime | None) -> str | None:
    """``2026-03-30T07:30:00.5Z`` (None stays None)."""
    return None if when is None else when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def fire_out(fire: Fire, zone: ZoneInfo) -> FireOut:
    """A fire as it is answered, its due time also on ``zone``'s clock."""
    return FireOut(
        fire_id=fire.fire_id,
        schedule=fire.schedule,
        due=moment(fire.due, zone),
        kind=fire.kind,
        state=fire.state,
        detail=fire.detail,
        session=fire.session,
        attempts=fire.attempts,
        started=iso(fire.started),
        finished=iso(fire.finished),
    )


def schedule_out(seen: Overview) -> ScheduleOut:
    """A schedule's overview as it is answered."""
    spec = seen.spec
    paused = seen.paused_since
    return ScheduleOut(
        name=seen.name,
        when=describe_when(spec),
        cron=spec.cron,
        every=describe_when(spec).removeprefix("every ") if spec.every else None,
        zone=str(seen.zone),
        enabled=spec.enabled,
        paused=paused is not None,
        paused_since=moment(paused, seen.zone) if paused is not None else None,
        next_fire=moment(seen.next_fire, seen.zone) if seen.next_fire is not None else None,
        last_fires=[fire_out(f, seen.zone) for f in seen.last_fires],
        missed=seen.outcomes.get("missed", 0),
        outcomes=seen.outcomes,
    )


def beat_out(beat: Beat) -> BeatOut:
    """A heartbeat as it is answered."""
    return BeatOut(
        owner=beat.owner,
        host=beat.host,
        pid=beat.pid,
        since=iso(beat.since) or "",
        last=iso(beat.last) or "",
        age_s=round(beat.age, 1),
        stalled=beat.stalled,
    )


__all__ = [
    "BeatOut",
    "FireOut",
    "HistoryOut",
    "Moment",
    "RunNowOut",
    "ScheduleList",
    "ScheduleOut",
    "SchedulerOut",
    "beat_out",
    "fire_out",
    "iso",
    "moment",
    "schedule_out",
]
