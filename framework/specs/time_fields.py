"""Fields about time that spec files write: durations, IANA time zones, clock times, cron.

Each is an annotated type whose validator raises :func:`~.yaml_loader.spec_error`, so a
mistake comes out as ``file:line field: message`` with a fix, like every other card field.
``schedules.yaml`` and ``staffroom.yaml`` use them.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import datetime, time, timedelta
from functools import cache
from typing import Annotated, Any

from cronsim import CronSim, CronSimError
from pydantic import AfterValidator, BeforeValidator, PlainSerializer, WithJsonSchema

from ._explain import did_you_mean
from .yaml_loader import spec_error

_DURATION = re.compile(r"^\s*(\d{1,7})\s*([smhd])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = timedelta(days=3660)
"""Longest duration a field may say (ten years): more is a typo, and keeps sums in range."""
DURATION_FIX = 'write a whole number and a unit: s, m, h or d, e.g. "90s", "5m", "2h", "1d"'


def parse_duration(value: object) -> timedelta:
    """``"90s"``, ``"5m"``, ``"2h"``, ``"1d"`` -> a timedelta of at least one second.

    Raises a spec error (the loader names the file, line and field) for anything else.
    """
    if isinstance(value, timedelta):
        return value
    text = value if isinstance(value, str) else None
    match = _DURATION.match(text) if text is not None else None
    if match is None:
        shown = f"'{text[:40]}'" if text is not None else _kind(value)
        raise spec_error(f"{shown} is not a duration", DURATION_FIX)
    amount = timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    if amount < timedelta(seconds=1) or amount > MAX_DURATION:
        raise spec_error(f"'{text}' is out of range (1s to {MAX_DURATION.days}d)", DURATION_FIX)
    return amount


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"the number {value}"
    return "this value"


def format_duration(value: timedelta) -> str:
    """``timedelta(minutes=90)`` -> ``"90m"``: the largest unit that divides it exactly."""
    seconds = int(value.total_seconds())
    for unit in ("d", "h", "m"):
        if seconds % _UNIT_SECONDS[unit] == 0 and seconds:
            return f"{seconds // _UNIT_SECONDS[unit]}{unit}"
    return f"{seconds}s"


Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "pattern": r"^\s*\d{1,7}\s*[smhd]\s*$"}),
]
"""A duration written ``<n>s|m|h|d`` (``90s``, ``5m``, ``2h``, ``1d``), at least 1s."""


@cache
def _zone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def zone_suggestion(name: str) -> str | None:
    """A known IANA name close to ``name``: ``Berlin`` -> ``Europe/Berlin``,
    ``america/new york`` -> ``America/New_York``; None when nothing is close."""
    names = _zone_names()
    wanted = name.strip().replace(" ", "_")
    by_city = [n for n in names if n.rsplit("/", 1)[-1].lower() == wanted.lower()]
    if by_city:
        return sorted(by_city, key=len)[0]
    return did_you_mean(wanted, names)


def _zone_name(value: str) -> str:
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        guess = zone_suggestion(value[:80])
        maybe = f" (did you mean '{guess}'?)" if guess else ""
        examples = f"`{guess}`" if guess else "Europe/Berlin, America/New_York, Asia/Shanghai, UTC"
        raise spec_error(
            f"unknown time zone '{value[:80]}'{maybe}",
            f"write an IANA time zone name, e.g. {examples}",
        ) from None
    return value


TimeZoneName = Annotated[str, AfterValidator(_zone_name)]
"""An IANA time zone name that :mod:`zoneinfo` knows (``Europe/Berlin``, ``UTC``)."""

_CLOCK = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*$")
CLOCK_FIX = 'write the time as HH:MM on a 24-hour clock, e.g. "09:00" or "17:30"'


def parse_clock(value: object) -> time:
    """``"09:00"`` -> ``time(9, 0)``.

    YAML 1.1 reads an unquoted ``10:30`` as the number 630 (base 60), so a whole number
    below 24*60 is read back as those minutes after midnight.
    """
    if isinstance(value, time):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 24 * 60:
        return time(value // 60, value % 60)
    match = _CLOCK.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        shown = f"'{value[:40]}'" if isinstance(value, str) else _kind(value)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            hours, minutes = divmod(value, 60)
            shown += f" (or {hours}:{minutes:02d} unquoted)"
        raise spec_error(f"{shown} is not a time of day", CLOCK_FIX)
    return time(int(match.group(1)), int(match.group(2)))


ClockTime = Annotated[
    time,
    BeforeValidator(parse_clock),
    PlainSerializer(lambda value: f"{value:%H:%M}", return_type=str, when_used="json"),
    WithJsonSchema({"type": "string", "pattern": r"^\s*\d{1,2}:\d{2}\s*$"}),
]
"""A time of day written ``HH:MM`` (24-hour clock)."""

CRON_FIX = (
    'write 5 fields: minute hour day-of-month month day-of-week, e.g. "30 9 * * mon-fri" '
    '(09:30 on weekdays) or "0 */2 * * *" (every two hours)'
)
_CRON_FIELDS = ("minute", "hour", "day-of-month", "month", "day-of-week")


def _cron(value: str) -> str:
    expr = " ".join(value.split())
    fields = expr.split(" ") if expr else []
    if len(fields) != len(_CRON_FIELDS):
        raise spec_error(
            f"cron expression '{value[:80]}' has {len(fields)} field(s), not 5", CRON_FIX
        )
    try:
        CronSim(expr, datetime(2000, 1, 1))
    except CronSimError as exc:
        # cronsim says which field ("Bad day-of-week"): keep it.
        raise spec_error(
            f"cron expression '{expr}' is not valid: {str(exc).lower()}", CRON_FIX
        ) from None
    return expr


CronExpr = Annotated[str, AfterValidator(_cron)]
"""A 5-field cron expression (cronsim's syntax: names like ``mon-fri``, ``L``, ``#``)."""


def _date_means_midnight(value: Any) -> Any:
    # A date alone (`start_at: 2026-01-05`) means its midnight.
    if isinstance(value, str | datetime) or value is None:
        return value
    if hasattr(value, "year") and hasattr(value, "month") and hasattr(value, "day"):
        return datetime(value.year, value.month, value.day)
    return value


Instant = Annotated[datetime, BeforeValidator(_date_means_midnight)]
"""A date and time; without an offset it is read in the schedule's time zone."""

__all__ = [
    "CLOCK_FIX",
    "CRON_FIX",
    "DURATION_FIX",
    "MAX_DURATION",
    "ClockTime",
    "CronExpr",
    "Duration",
    "Instant",
    "TimeZoneName",
    "format_duration",
    "parse_clock",
    "parse_duration",
    "zone_suggestion",
]
