"""A week of schedules on a simulated clock, across a DST change and a restart.

Europe/Berlin goes from CET to CEST on 2026-03-29 (02:00 -> 03:00). The scheduler ticks every
15 simulated minutes from Wednesday 2026-03-25 to Wednesday 2026-04-01, is down from Thursday
07:00Z to Friday 20:00Z, and comes back as a new scheduler (a restart) on the same data folder.
Every due time fires exactly once or is reported missed by its policy; each fire that ran
posted its message once.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from schedule_sim import SimClock, copy_project

from framework import Settings, Staffroom
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.sessions.events import EventKind
from framework.sessions.keys import SessionKey

SCHEDULES = """\
timezone: Europe/Berlin
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    start: {dm: {employee: pm, user: lead, message: "Stand-up: what is next?"}}
    missed: {policy: once, grace: 10m}
  night:
    cron: "30 2 * * *"
    start: {dm: {employee: engineer, user: ops, message: "Night check: anything broken?"}}
    missed: {policy: skip, grace: 10m}
  check:
    every: 6h
    quiet: true
    start: {dm: {employee: designer, user: lead, message: "Anything that needs someone?"}}
    missed: {policy: all, cap: 2, grace: 10m}
"""

START = datetime(2026, 3, 25, tzinfo=UTC)
END = datetime(2026, 4, 1, tzinfo=UTC)
DOWN = (datetime(2026, 3, 26, 7, tzinfo=UTC), datetime(2026, 3, 27, 20, tzinfo=UTC))
TICK = timedelta(minutes=15)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    copy_project(project)
    (project / "schedules.yaml").write_text(SCHEDULES, encoding="utf-8")
    return project


async def _run_until(settings: Settings, clock: SimClock, until: datetime, owner: str) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), owner=owner, clock=clock)
        try:
            at = clock.at  # ticks on a grid (a queued fire's waits move the clock too)
            while at <= until:
                clock.at = max(clock.at, at)
                await scheduler.tick()
                await scheduler.drain()
                at += TICK
        finally:
            await store.close()


def _z(day: int, hour: int, minute: int = 0) -> str:
    return f"2026-03-{day:02d}T{hour:02d}:{minute:02d}:00Z"


async def test_a_week_across_dst_and_a_restart_fires_every_due_time_once(
    settings: Settings, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"project_dir": _project(tmp_path)})
    clock = SimClock(START)
    await _run_until(settings, clock, DOWN[0], owner="first")
    clock.at = DOWN[1]  # the machine was off: nothing ticked
    await _run_until(settings, clock, END, owner="second")

    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        fires = {f.fire_id: f for f in await store.history(limit=500)}
        await store.close()
        logs = {
            who: staff.sessions.log(SessionKey.parse(f"dm:{user}@{who}")).read_all()
            for who, user in (("pm", "lead"), ("engineer", "ops"), ("designer", "lead"))
        }

    # Stand-up, 09:30 Berlin on weekdays: 08:30Z in CET, 07:30Z in CEST (after the 29th).
    standup = {f"standup@{_z(d, 8, 30)}" for d in (25, 26, 27)}
    standup |= {f"standup@2026-03-{d}T07:30:00Z" for d in (30, 31)}
    # 02:30 Berlin daily; on the 29th 02:30 does not exist: it fires at 03:00 CEST (01:00Z).
    night = {f"night@{_z(d, 1, 30)}" for d in (25, 26, 27, 28)}
    night |= {f"night@{_z(29, 1)}"} | {f"night@{_z(d, 0, 30)}" for d in (30, 31)}
    check = {f"check@{(START + timedelta(hours=6 * k)):%Y-%m-%dT%H:%M:%SZ}" for k in range(1, 29)}
    assert {f for f in fires if not f.startswith("reflection-")} == standup | night | check

    state = {fid: f.state for fid, f in fires.items()}
    kinds = {fid: f.kind for fid, f in fires.items()}
    # Down from Thursday 07:00Z to Friday 20:00Z: by policy.
    assert state[f"standup@{_z(26, 8, 30)}"] == "missed"  # once: only the latest runs
    assert kinds[f"standup@{_z(27, 8, 30)}"] == "catchup"
    assert state[f"night@{_z(27, 1, 30)}"] == "missed"  # skip: reported, not run
    missed_checks = [_z(26, 12), _z(26, 18), _z(27, 0), _z(27, 6)]
    assert [state[f"check@{t}"] for t in missed_checks] == ["missed"] * 4
    assert [kinds[f"check@{t}"] for t in (_z(27, 12), _z(27, 18))] == ["catchup", "catchup"]
    ran = {fid for fid, s in state.items() if s != "missed"}
    assert all(state[f] == "done" for f in ran & (standup | night)), state
    # Quiet: the simulator has nothing to report on a check that lists nothing.
    assert all(state[f] == "quiet" for f in ran & check), state

    # Each fire that ran posted its message once, in its DM, and was answered.
    for who, fired in (("pm", standup), ("engineer", night), ("designer", check)):
        posted = [
            e.meta["schedule"]["fire"]
            for e in logs[who]
            if e.kind == EventKind.MESSAGE and e.from_person and "schedule" in e.meta
        ]
        assert sorted(posted) == sorted(fired & ran)
    quiet_replies = [
        e for e in logs["designer"] if e.kind == EventKind.MESSAGE and not e.from_person
    ]
    assert quiet_replies and all(e.meta.get("nothing_to_report") for e in quiet_replies)
