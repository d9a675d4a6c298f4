"""``schedules.yaml`` at a project's root (optional): rooms, DMs and reflections that start on
their own. Each schedule says when (``cron`` in a time zone, or ``every``), what to start
(``room`` / ``dm`` / ``reflection``), where to deliver, and its missed-run, overlap, retry and
quiet policies; the format is in the docs' "Files you write" page.

A missing or empty file means no schedules. Errors name the file, line, field and fix. Due
times are computed in :mod:`framework.schedules.timing`.
"""

from __future__ import annotations

import string
from collections.abc import Collection
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from framework.errors import InputError, UnknownNameError
from framework.names import NAME_FIX, is_name

from ._explain import hint
from .employee import Slug
from .limits import MAX_LABEL_CHARS, MAX_TEXT_CHARS
from .time_fields import CronExpr, Duration, Instant, TimeZoneName
from .yaml_loader import PathKey, SpecModel, load_yaml_file, spec_error, validate

SCHEDULES_FILE = "schedules.yaml"
ROOM_PLACEHOLDERS = ("date", "time", "schedule")
"""What a room id template may name: ``{date}`` (local YYYY-MM-DD of the due time),
``{time}`` (local HHMM) and ``{schedule}`` (the schedule's id)."""
DEFAULT_ROOM = "{schedule}-{date}-{time}"


class SchedulesFileError(InputError):
    """``schedules.yaml`` is malformed."""


def _name(what: str) -> AfterValidator:
    def check(value: str) -> str:
        # Names become folders, session keys and fire ids (framework.names): one rule.
        if not is_name(value):
            raise spec_error(f"invalid {what} {value[:80]!r}", NAME_FIX)
        return value

    return AfterValidator(check)


Name = Annotated[str, _name("name")]
"""A person, user or room name (:func:`framework.names.check_name`'s rule)."""
ScheduleId = Annotated[str, _name("schedule id")]


def _room_template(value: str) -> str:
    fix = (
        "use only {date}, {time} and {schedule} in braces, e.g. standup-{date}; "
        "the rest letters, digits or - _ . @ +"
    )
    try:
        fields = [
            (f, spec, conv) for _, f, spec, conv in string.Formatter().parse(value) if f is not None
        ]
    except ValueError:
        raise spec_error(f"room id '{value[:80]}' has an unmatched brace", fix) from None
    for name, spec, conv in fields:
        if name not in ROOM_PLACEHOLDERS:
            guess = hint(name[:40], ROOM_PLACEHOLDERS)
            raise spec_error(f"unknown placeholder {{{name[:40]}}} in room id{guess}", fix)
        if spec or conv:
            raise spec_error(f"room id '{value[:80]}' formats a placeholder", fix)
    if not is_name(render_template(value, "x")):
        raise spec_error(f"'{value[:80]}' does not make a valid room id", fix)
    return value


def render_template(
    template: str, schedule: str, date: str = "2026-01-01", time: str = "0930"
) -> str:
    """``template`` with its placeholders filled (defaults: sample values, for checks)."""
    return template.format_map({"date": date, "time": time, "schedule": schedule})


RoomTemplate = Annotated[str, AfterValidator(_room_template)]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RoomStart(_Part):
    """Open a room of a scenario and post its first message."""

    scenario: Slug = Field(description="the scenario's id", examples=["standup"])
    room: RoomTemplate = Field(
        default=DEFAULT_ROOM,
        max_length=MAX_LABEL_CHARS,
        description="room id; {date} (local YYYY-MM-DD), {time} (local HHMM) and {schedule} "
        "are filled from the due time",
        examples=["standup-{date}"],
    )
    message: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="the room's first message (none: the room starts on its announcement)",
        examples=["Stand-up: what did you do, what's next, any blockers?"],
    )
    author: Name | None = Field(
        default=None,
        description="who posts the message (default: the scenario's first human)",
        examples=["lead"],
    )


class DmStart(_Part):
    """A DM turn: ``user`` writes ``message`` to ``employee``."""

    employee: Slug = Field(description="the employee's id", examples=["pm"])
    user: Name = Field(
        default="scheduler", description="who writes (the DM's person)", examples=["scheduler"]
    )
    message: str = Field(
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="what the user writes",
        examples=["Morning check: anything new?"],
    )


class ReflectionStart(_Part):
    """Run the employee's due reflection triggers."""

    employee: Slug = Field(description="the employee's id", examples=["pm"])


class Start(_Part):
    """What a fire starts: exactly one of ``room``, ``dm``, ``reflection``."""

    room: RoomStart | None = None
    dm: DmStart | None = None
    reflection: ReflectionStart | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [k for k in ("room", "dm", "reflection") if getattr(self, k) is not None]
        if len(given) != 1:
            said = f"{' and '.join(given)} are given" if given else "nothing is given"
            raise spec_error(
                f"start needs exactly one of room, dm, reflection; {said}",
                "keep one, e.g. `room: {scenario: standup, message: Stand-up!}`",
            )
        return self

    @property
    def kind(self) -> Literal["room", "dm", "reflection"]:
        """Which of the three this is."""
        return "room" if self.room else "dm" if self.dm else "reflection"


class DmTarget(_Part):
    """A DM to deliver into."""

    employee: Slug = Field(description="the employee's id", examples=["pm"])
    user: Name = Field(description="the person of the DM", examples=["alice"])


class Deliver(_Part):
    """Where the result goes: an adapter's chat (and thread), a room, or a DM."""

    adapter: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="an adapter name from the server's adapters config",
        examples=["slack"],
    )
    chat: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="the platform's chat / channel id",
        examples=["C0002"],
    )
    thread: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_LABEL_CHARS,
        description="a thread in the chat (Slack thread_ts, Feishu root message id)",
        examples=["1700000000.000100"],
    )
    room: Name | None = Field(default=None, description="a room id", examples=["standup"])
    dm: DmTarget | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        given = [
            k
            for k, v in (
                ("adapter", self.adapter or self.chat),
                ("room", self.room),
                ("dm", self.dm),
            )
            if v
        ]
        fix = "write adapter and chat (thread optional), or room, or dm: {employee, user}"
        if len(given) != 1:
            said = f"{' and '.join(given)} are given" if given else "nothing is given"
            raise spec_error(f"deliver needs exactly one target; {said}", fix)
        if given == ["adapter"] and not (self.adapter and self.chat):
            missing = "chat" if self.adapter else "adapter"
            raise spec_error(f"deliver to an adapter needs {missing} too", fix, at=())
        if self.thread is not None and given != ["adapter"]:
            raise spec_error("thread goes with adapter and chat", fix, at=("thread",))
        return self

    @property
    def kind(self) -> Literal["adapter", "room", "dm"]:
        """Which kind of target this is."""
        return "adapter" if self.adapter else "room" if self.room else "dm"


class Missed(_Part):
    """What happens to due times that passed while no scheduler ran."""

    policy: Literal["skip", "once", "all"] = Field(
        default="once",
        description="skip: report them only; once: run the latest; all: run up to cap, "
        "latest first kept",
    )
    cap: int = Field(
        default=10, ge=1, le=1000, description="most missed fires `all` runs", examples=[10]
    )
    grace: Duration = Field(
        default=timedelta(minutes=5),
        json_schema_extra={"default": "5m"},  # as written in the file, not ISO 8601
        description="how late a fire may start and still count as on time",
        examples=["5m"],
    )


class ScheduleSpec(_Part):
    """One schedule: when (cron or every), what to start, where to deliver, and its policies."""

    cron: CronExpr | None = Field(
        default=None,
        description="5-field cron, in the schedule's time zone",
        examples=["30 9 * * mon-fri"],
    )
    every: Duration | None = Field(
        default=None,
        description="an interval: <n>s|m|h|d; fires at start_at + k*every",
        examples=["90m"],
    )
    start_at: Instant | None = Field(
        default=None,
        description="anchor of `every` (no offset: the schedule's time zone; default "
        "1970-01-01T00:00Z)",
        examples=["2026-01-05T09:00"],
    )
    timezone: TimeZoneName | None = Field(
        default=None, description="IANA time zone name", examples=["America/New_York"]
    )
    start: Start
    deliver: Deliver | None = None
    missed: Missed = Field(default_factory=Missed)
    overlap: Literal["skip", "queue"] = Field(
        default="skip", description="what a fire does while the previous one still runs"
    )
    retries: int = Field(
        default=0, ge=0, le=10, description="extra attempts after a failed run", examples=[1]
    )
    quiet: bool = Field(
        default=False,
        description='the employee may answer "nothing to report": then nothing is delivered',
    )
    enabled: bool = True

    @model_validator(mode="after")
    def _when(self) -> Self:
        if (self.cron is None) == (self.every is None):
            said = "both are given" if self.cron is not None else "neither is given"
            raise spec_error(
                f"a schedule needs exactly one of cron and every; {said}",
                'write `cron: "30 9 * * mon-fri"` or `every: 90m`',
            )
        if self.start_at is not None and self.every is None:
            raise spec_error(
                "start_at anchors an interval (every), not a cron schedule",
                "remove start_at, or use every",
                at=("start_at",),
            )
        return self


class SchedulesFile(SpecModel):
    """What ``schedules.yaml`` says (no schedules when the file is missing)."""

    timezone: TimeZoneName | None = Field(
        default=None,
        description="default time zone of every schedule (else staffroom.yaml's, else UTC)",
        examples=["Europe/Berlin"],
    )
    schedules: dict[ScheduleId, ScheduleSpec] = Field(
        default_factory=dict, description="schedule id -> schedule"
    )

    @model_validator(mode="after")
    def _room_ids(self) -> Self:
        for sid, spec in self.schedules.items():
            if spec.start.room is not None:
                room = render_template(spec.start.room.room, sid)
                if not is_name(room):
                    raise spec_error(
                        f"room id '{room[:80]}' (for schedule '{sid}') is not a valid room id",
                        NAME_FIX,
                        at=("schedules", sid, "start", "room", "room"),
                    )
        return self


def load_schedules(project_dir: str | Path) -> SchedulesFile:
    """``schedules.yaml`` of the project folder; a missing or empty file has no schedules.

    Errors are :class:`SchedulesFileError` naming the file, line, field and fix.
    """
    path = Path(project_dir) / SCHEDULES_FILE
    if not path.is_file():
        return SchedulesFile().with_source(path, {})
    data, lines = load_yaml_file(path, error_cls=SchedulesFileError)
    if data is None:
        return SchedulesFile().with_source(path, lines)
    return validate(SchedulesFile, data, file=path, lines=lines, error_cls=SchedulesFileError)


def schedule_problems(
    file: SchedulesFile, employees: Collection[str], scenarios: Collection[str]
) -> list[InputError]:
    """Scenarios and employees the schedules name that the project does not have.

    ``employees`` / ``scenarios``: the ids the project defines (a broken file's id included:
    its own error says what is wrong with it).
    """
    problems: list[InputError] = []

    def check(name: str, known: Collection[str], kind: str, at: PathKey) -> None:
        if name in known:
            return
        listed = ", ".join(sorted(known)) or "none"
        folder = "scenarios/" if kind == "scenario" else "agents/"
        problems.append(
            UnknownNameError(
                f"unknown {kind} '{name}'{hint(name, known)}",
                file=file.source,
                line=file.line_of(*at),
                field=".".join(str(p) for p in at),
                fix=f"use one defined in {folder} (defined: {listed})",
            )
        )

    for sid, spec in file.schedules.items():
        base: PathKey = ("schedules", sid)
        start = spec.start
        if start.room is not None:
            check(start.room.scenario, scenarios, "scenario", (*base, "start", "room", "scenario"))
        for part, target in (("dm", start.dm), ("reflection", start.reflection)):
            if target is not None:
                check(target.employee, employees, "employee", (*base, "start", part, "employee"))
        if spec.deliver is not None and spec.deliver.dm is not None:
            at = (*base, "deliver", "dm", "employee")
            check(spec.deliver.dm.employee, employees, "employee", at)
    return problems


__all__ = [
    "DEFAULT_ROOM",
    "ROOM_PLACEHOLDERS",
    "SCHEDULES_FILE",
    "Deliver",
    "DmStart",
    "DmTarget",
    "Missed",
    "ReflectionStart",
    "RoomStart",
    "ScheduleSpec",
    "SchedulesFile",
    "SchedulesFileError",
    "Start",
    "load_schedules",
    "render_template",
    "schedule_problems",
]
