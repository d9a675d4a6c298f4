"""Edits to schedules.yaml take effect on the next tick: a new schedule starts from then, a
deleted one fires no more (a fire of it left by a dead scheduler is ended, not left running),
a broken edit keeps the last good file in force and is reported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from schedule_sim import SimClock, copy_project

from framework import Settings, Staffroom
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler

ONE = '    start: {dm: {employee: pm, user: lead, message: "Status?"}}\n'


def _file(*names: str) -> str:
    return "schedules:\n" + "".join(f"  {n}:\n    every: 1h\n{ONE}" for n in names)


async def test_edits_take_effect_on_the_next_tick(settings: Settings, tmp_path: Path) -> None:
    project = tmp_path / "project"
    copy_project(project)
    path = project / "schedules.yaml"
    path.write_text(_file("old"), encoding="utf-8")
    settings = settings.model_copy(update={"project_dir": project})
    t0 = datetime(2026, 5, 4, 10, 0, tzinfo=UTC)
    clock = SimClock(t0 - timedelta(minutes=1))
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), clock=clock)
        try:

            async def tick_at(at: datetime) -> list[str]:
                clock.at = at
                started = (await scheduler.tick()).started
                await scheduler.drain()
                return started

            assert await tick_at(t0 - timedelta(minutes=1)) == []  # first seen
            path.write_text(_file("old", "new"), encoding="utf-8")
            assert await tick_at(t0 + timedelta(minutes=1)) == ["old@2026-05-04T10:00:00Z"]
            # A fire of "old" claimed by a scheduler that then died, and "old" is deleted.
            orphan = "old@2026-05-04T11:00:00Z"
            hour = t0 + timedelta(hours=1)
            assert await store.claim(orphan, "old", hour, "due", "dead", now=hour, lease_s=30)
            path.write_text(_file("new"), encoding="utf-8")
            later = t0 + timedelta(hours=1, minutes=5)
            assert await tick_at(later) == ["new@2026-05-04T11:00:00Z"]
            ended = await store.get(orphan)
            assert ended is not None and ended.state == "skipped" and "deleted" in ended.detail
            path.write_text("schedules:\n  new: [broken\n", encoding="utf-8")
            assert await tick_at(t0 + timedelta(hours=2, minutes=1)) == [
                "new@2026-05-04T12:00:00Z"
            ]  # the last good file still in force
            error = scheduler.status().file_error
            assert error is not None and "schedules.yaml" in error
            fired = {f.fire_id for f in await store.history(limit=50)}
        finally:
            await store.close()
    assert not any(f.startswith("old@") and f > orphan for f in fired)
