"""What a fire is recorded as, when its run went wrong or was done before (review cases)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from schedule_sim import SimClock, copy_project

from framework import Settings, Staffroom
from framework.models import ScriptedChatModel, SimulatedChatModel
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.schedules.timing import fire_id
from framework.specs.model_spec import ModelSpec

DM = """\
schedules:
  check:
    cron: "30 9 * * *"
    retries: 1
    quiet: {quiet}
    missed: {{policy: once, grace: 10m}}
    start: {{dm: {{employee: pm, user: lead, message: "Morning: status?"}}}}
"""


def _settings(settings: Settings, tmp_path: Path, quiet: bool = False) -> Settings:
    project = tmp_path / "project"
    copy_project(project)
    text = DM.format(quiet="true" if quiet else "false")
    (project / "schedules.yaml").write_text(text, encoding="utf-8")
    return settings.model_copy(update={"project_dir": project, "model_retries": 0})


def _pm(model: Any) -> Any:
    def factory(spec: ModelSpec, who: str) -> Any:
        return model if who == "pm" else None

    return factory


async def test_a_retry_asks_a_dm_again_and_a_second_failure_is_recorded(
    settings: Settings, tmp_path: Path
) -> None:
    settings = _settings(settings, tmp_path)
    ok = ScriptedChatModel(replies=[RuntimeError("upstream 503"), "All good."])
    async with await Staffroom.open(settings=settings, model_factory=_pm(ok)) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff))
        await scheduler.run_now("check", "retried")
        await scheduler.drain()
        retried = await store.get("check@now-retried")
        await store.close()
    assert retried is not None and retried.state == "done" and len(ok.calls) == 2

    down = ScriptedChatModel(replies=[RuntimeError("503"), RuntimeError("503 again")])
    async with await Staffroom.open(settings=settings, model_factory=_pm(down)) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff))
        await scheduler.run_now("check", "failed")
        await scheduler.drain()
        failed = await store.get("check@now-failed")
        await store.close()
    # It was recorded 'done, 0 replies' (the retry reposted the same id: nothing ran).
    assert failed is not None and failed.state == "failed", failed
    assert "after 2 attempts" in failed.detail and len(down.calls) == 2


async def test_a_taken_over_fire_is_judged_by_the_answer_its_room_holds(
    settings: Settings, tmp_path: Path
) -> None:
    settings = _settings(settings, tmp_path, quiet=True)
    due = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
    clock = SimClock(due)
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        taker = Scheduler(staff, store, Runner(staff), owner="taker", clock=clock)
        spec = taker.schedules().schedules["check"]
        fid = fire_id("check", due)
        # A scheduler ran the fire (quiet: nothing open) and died before recording it.
        fire = await store.claim(fid, "check", due, "due", "dead", now=due, lease_s=60)
        assert fire is not None
        first = await Runner(staff).run("check", spec, fire, ZoneInfo("UTC"))
        await store.advance("check", due)
        clock.at = due + timedelta(minutes=2)
        report = await taker.tick()
        await taker.drain()
        taken = await store.get(fid)
        await store.close()
    assert report.taken_over == [fid]
    assert first.state == "quiet" and taken is not None and taken.state == "quiet", taken


async def test_back_in_time_for_todays_fire_once_runs_today_not_a_stale_catch_up(
    settings: Settings, tmp_path: Path
) -> None:
    settings = _settings(settings, tmp_path)
    clock = SimClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), clock=clock)
        await scheduler.tick()
        clock.at = datetime(2026, 3, 4, 9, 32, tzinfo=UTC)  # down two days, back at 09:32
        await scheduler.tick()
        await scheduler.drain()
        fires = {f.fire_id: f.state for f in await store.history("check")}
        await store.close()
    assert fires == {
        "check@2026-03-02T09:30:00Z": "missed",
        "check@2026-03-03T09:30:00Z": "missed",
        "check@2026-03-04T09:30:00Z": "done",
    }


async def test_a_long_run_keeps_its_claim_without_ticks(settings: Settings, tmp_path: Path) -> None:
    # `staffroom schedules run-now` never ticks; a server's scheduler must not take it over.
    settings = _settings(settings, tmp_path)
    slow = SimulatedChatModel(delay=1.5)
    async with await Staffroom.open(settings=settings, model_factory=_pm(slow)) as staff:
        cli_store = await open_fire_store(settings.data_dir, await staff.stores.database())
        server_store = await open_fire_store(settings.data_dir, await staff.stores.database())
        cli = Scheduler(staff, cli_store, Runner(staff), owner="cli", lease_seconds=0.5)
        server = Scheduler(
            staff, server_store, Runner(staff), owner="server", tick_seconds=0.1, lease_seconds=0.5
        )
        stop = asyncio.Event()
        ticking = asyncio.create_task(server.run_forever(stop))
        await cli.run_now("check", "long")
        await cli.drain()
        stop.set()
        await ticking
        fire = await cli_store.get("check@now-long")
        await cli_store.close()
        await server_store.close()
    assert fire is not None and fire.owner == "cli" and fire.attempts == 1, fire
    assert fire.state == "done"


async def test_a_broken_staffroom_yaml_keeps_the_last_good_one(
    settings: Settings, tmp_path: Path
) -> None:
    settings = _settings(settings, tmp_path)
    clock = SimClock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), clock=clock)
        await scheduler.tick()
        (settings.project_dir / "staffroom.yaml").write_text("timezone: Europe/Berln\n")
        clock.at = datetime(2026, 3, 2, 9, 31, tzinfo=UTC)
        await scheduler.tick()  # it raised ProjectFileError, and no schedule fired
        await scheduler.drain()
        fired = await store.get("check@2026-03-02T09:30:00Z")
        error = scheduler.status().file_error
        await store.close()
    assert fired is not None and fired.state == "done"
    assert error is not None and "Europe/Berln" in error
