"""Due times: cron in the schedule's zone across the real 2026 DST changes (a local time that
does not exist fires at the first instant after the gap, a repeated one fires once),
intervals in UTC, fire ids, room ids, reflection times, and the missed-run policies."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest

from framework.schedules.timing import (
    EPOCH,
    classify,
    due_times,
    fire_id,
    next_due,
    reflection_due,
    render_room_id,
    run_now_id,
    zone_of,
)
from framework.specs.schedules_file import SchedulesFile, ScheduleSpec

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def spec(**when: object) -> ScheduleSpec:
    return ScheduleSpec.model_validate({"start": {"reflection": {"employee": "pm"}}, **when})


def z(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def local(zone: ZoneInfo, *args: int) -> datetime:
    return datetime(*args, tzinfo=zone).astimezone(UTC)  # type: ignore[misc]


def shown(dues: list[datetime], zone: ZoneInfo) -> list[str]:
    return [f"{d.astimezone(zone):%m-%d %H:%M%z}" for d in dues]


# Spring forward: Berlin 2026-03-29 02:00 CET -> 03:00 CEST; New York 2026-03-08 02:00 EST
# -> 03:00 EDT. Fall back: Berlin 2026-10-25 03:00 CEST -> 02:00 CET; New York 2026-11-01
# 02:00 EDT -> 01:00 EST.
CASES = [
    # (zone, cron, from (local), to (local), expected local times)
    (BERLIN, "30 2 * * *", (2026, 3, 28), (2026, 3, 31),
     ["03-28 02:30+0100", "03-29 03:00+0200", "03-30 02:30+0200"]),
    (BERLIN, "30 2 * * *", (2026, 10, 24), (2026, 10, 27),
     ["10-24 02:30+0200", "10-25 02:30+0200", "10-26 02:30+0100"]),
    (BERLIN, "0 * * * *", (2026, 3, 29, 0, 30), (2026, 3, 29, 4),
     ["03-29 01:00+0100", "03-29 03:00+0200", "03-29 04:00+0200"]),
    (BERLIN, "0 * * * *", (2026, 10, 25, 0, 30), (2026, 10, 25, 4),
     ["10-25 01:00+0200", "10-25 02:00+0200", "10-25 03:00+0100", "10-25 04:00+0100"]),
    (NEW_YORK, "30 2 * * *", (2026, 3, 7), (2026, 3, 10),
     ["03-07 02:30-0500", "03-08 03:00-0400", "03-09 02:30-0400"]),
    (NEW_YORK, "30 1 * * *", (2026, 10, 31), (2026, 11, 3),
     ["10-31 01:30-0400", "11-01 01:30-0400", "11-02 01:30-0500"]),
    (NEW_YORK, "30 2 * * *", (2026, 10, 31), (2026, 11, 3),
     ["10-31 02:30-0400", "11-01 02:30-0500", "11-02 02:30-0500"]),
    (NEW_YORK, "0 * * * *", (2026, 11, 1, 0, 30), (2026, 11, 1, 3),
     ["11-01 01:00-0400", "11-01 02:00-0500", "11-01 03:00-0500"]),
    (NEW_YORK, "0 * * * *", (2026, 3, 8, 0, 30), (2026, 3, 8, 3),
     ["03-08 01:00-0500", "03-08 03:00-0400"]),
]  # fmt: skip


@pytest.mark.parametrize(("zone", "cron", "start", "end", "expected"), CASES)
def test_cron_across_dst_changes(
    zone: ZoneInfo,
    cron: str,
    start: tuple[int, ...],
    end: tuple[int, ...],
    expected: list[str],
) -> None:
    dues = due_times(spec(cron=cron), zone, local(zone, *start), local(zone, *end))
    assert shown(dues, zone) == expected
    assert all(d.tzinfo is UTC for d in dues)


@pytest.mark.parametrize(
    ("zone", "day", "gap_utc", "repeat_utc"),
    [
        (BERLIN, (2026, 3, 29), (z(2026, 3, 29, 0, 45), z(2026, 3, 29, 1)), None),
        (BERLIN, (2026, 10, 25), None, (z(2026, 10, 25, 0, 45), z(2026, 10, 25, 2))),
        (NEW_YORK, (2026, 3, 8), (z(2026, 3, 8, 6, 45), z(2026, 3, 8, 7)), None),
        (NEW_YORK, (2026, 11, 1), None, (z(2026, 11, 1, 5, 45), z(2026, 11, 1, 7))),
    ],
)
def test_every_quarter_hour_across_dst_changes(
    zone: ZoneInfo,
    day: tuple[int, int, int],
    gap_utc: tuple[datetime, datetime] | None,
    repeat_utc: tuple[datetime, datetime] | None,
) -> None:
    dues = due_times(spec(cron="*/15 * * * *"), zone, local(zone, *day), local(zone, *day, 6))
    steps = {(a, b): b - a for a, b in pairwise(dues)}
    quarter = timedelta(minutes=15)
    # Spring forward: the wall clock jumps, elapsed time does not: every 15 minutes, no gap.
    # Fall back: the repeated hour's quarters fire once, so one step is 75 minutes long.
    long_steps = {pair: step for pair, step in steps.items() if step != quarter}
    assert long_steps == ({repeat_utc: timedelta(minutes=75)} if repeat_utc else {})
    walls = [d.astimezone(zone).replace(tzinfo=None) for d in dues]
    assert len(set(walls)) == len(walls)  # no local time fires twice
    if gap_utc is not None:
        assert gap_utc in steps  # 01:45 then straight to 03:00 local


def test_a_tick_at_any_moment_finds_the_same_due_times() -> None:
    # A scheduler asks for (cursor, now] on each tick: cutting the day anywhere, the repeated
    # hour included, must give each due time exactly once.
    for zone, day in ((BERLIN, (2026, 10, 25)), (NEW_YORK, (2026, 11, 1)), (BERLIN, (2026, 3, 29))):
        for cron in ("30 2 * * *", "0 * * * *", "*/15 * * * *", "30 1 * * *"):
            start, end = local(zone, *day), local(zone, *day) + timedelta(hours=6)
            whole = due_times(spec(cron=cron), zone, start, end)
            pieces: list[datetime] = []
            cursor = start
            while cursor < end:
                now = min(cursor + timedelta(minutes=7, seconds=13), end)
                pieces += due_times(spec(cron=cron), zone, cursor, now)
                cursor = now
            assert pieces == whole, (zone, cron)


def test_a_gap_that_is_not_an_hour_ends_where_the_clock_resumes() -> None:
    lord_howe = ZoneInfo("Australia/Lord_Howe")  # 2026-10-04: 02:00 -> 02:30 (+10:30 -> +11)
    dues = due_times(spec(cron="15 2 * * *"), lord_howe, z(2026, 10, 3), z(2026, 10, 4, 12))
    assert shown(dues, lord_howe) == ["10-04 02:30+1100"]


def test_intervals_count_from_the_anchor_in_utc() -> None:
    every = spec(every="90m")
    dues = due_times(every, BERLIN, z(2026, 3, 29, 0, 10), z(2026, 3, 29, 6))
    assert dues[0] == z(2026, 3, 29, 1, 30)  # 1970-01-01T00:00Z + k * 90m (00:00Z is one)
    assert all((d - EPOCH) % timedelta(minutes=90) == timedelta(0) for d in dues)
    assert {b - a for a, b in pairwise(dues)} == {timedelta(minutes=90)}
    # A local anchor is read in the zone; after that, DST changes nothing (24h apart in UTC).
    daily = spec(every="1d", start_at="2026-03-27T09:00")
    dues = due_times(daily, BERLIN, z(2026, 3, 1), z(2026, 3, 31))
    assert dues == [z(2026, 3, 27, 8), z(2026, 3, 28, 8), z(2026, 3, 29, 8), z(2026, 3, 30, 8)]
    assert due_times(daily, BERLIN, z(2026, 3, 27, 8), z(2026, 3, 28, 8)) == [z(2026, 3, 28, 8)]
    assert due_times(daily, BERLIN, z(2026, 3, 1), z(2026, 4, 30), limit=2) == dues[:2]


def test_next_due_and_limits() -> None:
    standup = spec(cron="30 9 * * mon-fri")
    friday_evening = local(BERLIN, 2026, 3, 27, 18)
    assert next_due(standup, BERLIN, friday_evening) == local(BERLIN, 2026, 3, 30, 9, 30)
    assert next_due(standup, BERLIN, local(BERLIN, 2026, 3, 30, 9, 30)) == local(
        BERLIN, 2026, 3, 31, 9, 30
    )
    assert due_times(standup, BERLIN, friday_evening, friday_evening) == []
    with pytest.raises(ValueError, match="timezone-aware"):
        next_due(standup, BERLIN, datetime(2026, 3, 27))


def test_zone_of_prefers_the_schedule_then_the_file_then_the_project() -> None:
    own = spec(cron="0 9 * * *", timezone="Asia/Shanghai")
    bare = spec(cron="0 9 * * *")
    berlin_file = SchedulesFile(timezone="Europe/Berlin")
    assert zone_of(own, berlin_file, "America/New_York") == ZoneInfo("Asia/Shanghai")
    assert zone_of(bare, berlin_file, "America/New_York") == BERLIN
    assert zone_of(bare, SchedulesFile(), "America/New_York") == NEW_YORK
    assert zone_of(bare, SchedulesFile(), None) == ZoneInfo("UTC")


def test_fire_ids_are_the_schedule_and_the_due_time_in_utc() -> None:
    due = local(BERLIN, 2026, 3, 30, 9, 30)
    assert fire_id("standup", due) == "standup@2026-03-30T07:30:00Z"
    assert fire_id("standup", due.astimezone(BERLIN)) == "standup@2026-03-30T07:30:00Z"
    assert run_now_id("standup", "a1b2") == "standup@now-a1b2"


def test_room_ids_use_the_local_date_and_time() -> None:
    template = "{schedule}-{date}-{time}"
    assert render_room_id(template, z(2026, 3, 29, 1), BERLIN, "standup") == (
        "standup-2026-03-29-0300"
    )
    shanghai = ZoneInfo("Asia/Shanghai")  # 23:30Z is already tomorrow morning there
    assert render_room_id("r-{date}", z(2026, 1, 1, 23, 30), shanghai, "s") == "r-2026-01-02"


def test_reflection_due_is_the_local_time_on_that_day() -> None:
    assert reflection_due(date(2026, 6, 1), time(9), ZoneInfo("Asia/Shanghai")) == z(2026, 6, 1, 1)
    assert reflection_due(date(2026, 3, 29), time(2, 30), BERLIN) == z(2026, 3, 29, 1)  # gap
    assert reflection_due(date(2026, 10, 25), time(2, 30), BERLIN) == z(2026, 10, 25, 0, 30)


HOURLY = [z(2026, 3, 30, h) for h in range(5, 11)]  # 05:00 .. 10:00
NOW = z(2026, 3, 30, 10, 2)
GRACE = timedelta(minutes=5)


@pytest.mark.parametrize(
    ("policy", "cap", "caught_up", "missed"),
    [
        ("skip", 10, [], HOURLY[:5]),
        ("once", 10, [HOURLY[4]], HOURLY[:4]),
        ("all", 3, HOURLY[2:5], HOURLY[:2]),
        ("all", 10, HOURLY[:5], []),
    ],
)
def test_missed_fires_follow_the_policy(
    policy: str, cap: int, caught_up: list[datetime], missed: list[datetime]
) -> None:
    found = classify(list(reversed(HOURLY)), NOW, GRACE, policy, cap)  # type: ignore[arg-type]
    assert found.run == [(d, "catchup") for d in caught_up] + [(HOURLY[5], "due")]
    assert found.missed == missed


def test_grace_is_how_late_a_fire_may_start_and_still_be_on_time() -> None:
    due = z(2026, 3, 30, 9)
    on_time = classify([due], due + GRACE, GRACE, "skip", 1)
    assert on_time.run == [(due, "due")] and on_time.missed == []
    late = classify([due], due + GRACE + timedelta(seconds=1), GRACE, "skip", 1)
    assert late.run == [] and late.missed == [due]
    assert classify([], NOW, GRACE, "all", 10).run == []
