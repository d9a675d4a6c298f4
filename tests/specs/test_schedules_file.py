"""schedules.yaml as a card: a good file loads with its defaults; every kind of mistake names
the file, the line, the field and a fix; staffroom.yaml's timezone and reflection_time."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest

from framework.specs.project_file import ProjectFileError, load_project_file
from framework.specs.schedules_file import (
    SCHEDULES_FILE,
    SchedulesFile,
    SchedulesFileError,
    load_schedules,
    schedule_problems,
)

GOOD = """\
timezone: Europe/Berlin
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    timezone: America/New_York
    start:
      room: {scenario: standup, room: "standup-{date}", message: "Stand-up!", author: lead}
    deliver: {adapter: slack, chat: C0002, thread: "1700000000.000100"}
    missed: {policy: all, cap: 3, grace: 90s}
    overlap: queue
    retries: 1
    quiet: true
  morning-check:
    every: 2h
    start_at: 2026-01-05T09:00
    start:
      dm: {employee: pm, message: "Morning check: anything new?"}
    deliver:
      dm: {employee: pm, user: alice}
  review:
    cron: "0 9 * * 1"
    enabled: false
    start:
      reflection: {employee: pm}
    deliver: {room: weekly-review}
"""


def write(folder: Path, text: str) -> Path:
    path = folder / SCHEDULES_FILE
    path.write_text(text, encoding="utf-8")
    return path


def test_a_missing_or_empty_file_has_no_schedules(tmp_path: Path) -> None:
    assert load_schedules(tmp_path).schedules == {}
    write(tmp_path, "# nothing yet\n")
    assert load_schedules(tmp_path).schedules == {}


def test_a_good_file_loads_with_defaults_and_round_trips(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    loaded = load_schedules(tmp_path)
    assert loaded.source == path and loaded.timezone == "Europe/Berlin"
    standup, check, review = (loaded.schedules[k] for k in ("standup", "morning-check", "review"))
    assert standup.cron == "30 9 * * mon-fri" and standup.every is None
    assert standup.start.kind == "room" and standup.start.room is not None
    assert standup.start.room.room == "standup-{date}" and standup.start.room.author == "lead"
    assert standup.deliver is not None and standup.deliver.kind == "adapter"
    assert standup.deliver.thread == "1700000000.000100"
    assert (standup.missed.policy, standup.missed.cap) == ("all", 3)
    assert standup.missed.grace == timedelta(seconds=90)
    assert (standup.overlap, standup.retries, standup.quiet) == ("queue", 1, True)
    assert check.every == timedelta(hours=2) and check.start_at == datetime(2026, 1, 5, 9)
    assert check.start.dm is not None and check.start.dm.user == "scheduler"  # the default
    assert check.deliver is not None and check.deliver.kind == "dm"
    # Defaults: missed once within 5m, overlap skip, no retries, loud, enabled.
    assert (check.missed.policy, check.missed.cap, check.missed.grace) == (
        "once",
        10,
        timedelta(minutes=5),
    )
    assert (check.overlap, check.retries, check.quiet, check.enabled) == ("skip", 0, False, True)
    assert review.enabled is False and review.start.kind == "reflection"
    assert review.deliver is not None and review.deliver.kind == "room"
    # Written back in the file's own words, it loads to the same schedules.
    again = SchedulesFile.model_validate_json(loaded.model_dump_json())
    assert again.model_dump() == loaded.model_dump()
    assert '"grace":"90s"' in loaded.model_dump_json()


def test_an_aware_start_at_keeps_its_offset(tmp_path: Path) -> None:
    write(
        tmp_path,
        "schedules:\n  s:\n    every: 1d\n    start_at: 2026-01-05T09:00:00+01:00\n"
        "    start: {reflection: {employee: pm}}\n",
    )
    start_at = load_schedules(tmp_path).schedules["s"].start_at
    assert start_at is not None and start_at.astimezone(UTC) == datetime(2026, 1, 5, 8, tzinfo=UTC)


STANDUP = """\
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    start:
      room: {scenario: standup, room: "standup-{date}"}
"""

MISTAKES = [
    # (edit of STANDUP, line, field, words in the message, words in the fix)
    (
        ('"30 9 * * mon-fri"', '"30 9 * * mon-fry"'),
        3,
        "schedules.standup.cron",
        "not valid: bad day-of-week",
        "5 fields",
    ),
    (('"30 9 * * mon-fri"', '"30 9 * *"'), 3, "schedules.standup.cron", "4 field(s)", "5 fields"),
    (
        ('    cron: "30 9 * * mon-fri"\n', '    cron: "0 9 * * *"\n    timezone: Europe/Berln\n'),
        4,
        "schedules.standup.timezone",
        "did you mean 'Europe/Berlin'?",
        "IANA",
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', '    cron: "0 9 * * *"\n    every: 1h\n'),
        2,
        "schedules.standup",
        "exactly one of cron and every; both are given",
        "every: 90m",
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', ""),
        2,
        "schedules.standup",
        "exactly one of cron and every; neither is given",
        "every: 90m",
    ),
    (
        ('      room: {scenario: standup, room: "standup-{date}"}\n', "      {}\n"),
        4,
        "schedules.standup.start",
        "exactly one of room, dm, reflection; nothing is given",
        "keep one",
    ),
    (
        ("    start:\n", "    start:\n      reflection: {employee: pm}\n"),
        4,
        "schedules.standup.start",
        "room and reflection are given",
        "keep one",
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', "    every: 5x\n"),
        3,
        "schedules.standup.every",
        "'5x' is not a duration",
        '"90s", "5m"',
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', '    cron: "0 9 * * *"\n    missed: {grace: 0m}\n'),
        4,
        "schedules.standup.missed.grace",
        "out of range",
        '"90s", "5m"',
    ),
    (
        ("standup-{date}", "standup-{data}"),
        5,
        "schedules.standup.start.room.room",
        "unknown placeholder {data} in room id (did you mean 'date'?)",
        "{date}, {time} and {schedule}",
    ),
    (
        ("standup-{date}", "stand up {date}"),
        5,
        "schedules.standup.start.room.room",
        "does not make a valid room id",
        "letters, digits",
    ),
    (("  standup:", "  stand/up:"), 2, "schedules.stand/up", "invalid schedule id", "1-128"),
    (
        ("    start:\n", "    strat:\n"),
        4,
        "schedules.standup.strat",
        "unknown field 'strat' (did you mean 'start'?)",
        "rename 'strat' to 'start'",
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', '    cron: "0 9 * * *"\n    retries: 11\n'),
        4,
        "schedules.standup.retries",
        "must be <= 10",
        "from 0 to 10",
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', '    cron: "0 9 * * *"\n    deliver: {adapter: x}\n'),
        4,
        "schedules.standup.deliver",
        "needs chat too",
        "adapter and chat",
    ),
    (
        ('    cron: "30 9 * * mon-fri"\n', '    cron: "0 9 * * *"\n    start_at: 2026-01-01\n'),
        4,
        "schedules.standup.start_at",
        "anchors an interval",
        "remove start_at",
    ),
]


@pytest.mark.parametrize(("edit", "line", "field", "message", "fix"), MISTAKES)
def test_each_mistake_names_file_line_field_and_fix(
    tmp_path: Path, edit: tuple[str, str], line: int, field: str, message: str, fix: str
) -> None:
    assert edit[0] in STANDUP
    path = write(tmp_path, STANDUP.replace(*edit))
    with pytest.raises(SchedulesFileError) as caught:
        load_schedules(tmp_path)
    error = caught.value
    assert (error.file, error.line, error.field) == (str(path), line, field), error.render()
    assert message in error.message and error.fix is not None and fix in error.fix, error.render()


def test_the_room_id_is_checked_with_the_schedule_id_filled_in(tmp_path: Path) -> None:
    long_id = "s" * 125  # a valid id, but standup-<id> is over 128 characters
    write(tmp_path, STANDUP.replace("standup:", f"{long_id}:").replace("{date}", "{schedule}"))
    with pytest.raises(SchedulesFileError) as caught:
        load_schedules(tmp_path)
    assert caught.value.line == 5 and "is not a valid room id" in caught.value.message


def test_unknown_scenarios_and_employees_are_reported_with_their_lines(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("scenario: standup", "scenario: stand-up"))
    problems = schedule_problems(load_schedules(tmp_path), {"qa"}, {"standup"})
    found = {(p.line, p.field, p.message) for p in problems}
    assert all(p.file == str(path) for p in problems)
    guess = "unknown scenario 'stand-up' (did you mean 'standup'?)"
    assert found == {
        (7, "schedules.standup.start.room.scenario", guess),
        (17, "schedules.morning-check.start.dm.employee", "unknown employee 'pm'"),
        (19, "schedules.morning-check.deliver.dm.employee", "unknown employee 'pm'"),
        (24, "schedules.review.start.reflection.employee", "unknown employee 'pm'"),
    }  # fmt: skip
    assert schedule_problems(load_schedules(tmp_path), {"pm"}, {"stand-up"}) == []


def test_staffroom_yaml_timezone_and_reflection_time(tmp_path: Path) -> None:
    assert load_project_file(tmp_path).timezone is None
    assert load_project_file(tmp_path).reflection_time == time(9, 0)
    project = tmp_path / "staffroom.yaml"
    # YAML 1.1 reads an unquoted 17:30 as the number 1050: it still means half past five.
    for written, meant in (('"07:45"', time(7, 45)), ("17:30", time(17, 30))):
        project.write_text(f"timezone: Asia/Shanghai\nreflection_time: {written}\n")
        loaded = load_project_file(tmp_path)
        assert (loaded.timezone, loaded.reflection_time) == ("Asia/Shanghai", meant)
    for text, line, field, words in (
        ("language: en\ntimezone: asia/shanghai\n", 2, "timezone", "'Asia/Shanghai'"),
        ("reflection_time: 25:00\n", 1, "reflection_time", "not a time of day"),
        ('reflection_time: "9am"\n', 1, "reflection_time", "not a time of day"),
    ):
        project.write_text(text)
        with pytest.raises(ProjectFileError) as caught:
            load_project_file(tmp_path)
        error = caught.value
        assert (error.line, error.field) == (line, field) and words in error.message
