"""The scheduler's built-in job: sessions silent past ``session_idle`` are closed (their end
runs its hooks once), which a server never did before it ran a scheduler."""

from __future__ import annotations

import asyncio

from framework import Settings, Staffroom
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.sessions.events import EventKind


async def test_a_tick_closes_the_idle_sessions_once(settings: Settings) -> None:
    settings = settings.model_copy(update={"session_idle": 0.2})
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("pm", "lead")
        _ = [e async for e in dm.post("hello", author="lead")]
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), idle_every=0)
        try:
            await scheduler.tick()
            await scheduler.drain()
            assert not [e for e in dm.history() if e.kind == EventKind.SESSION_END]
            await asyncio.sleep(0.3)  # silent past session_idle (a wall-clock setting)
            for _ in range(2):
                await scheduler.tick()
                await scheduler.drain()
        finally:
            await store.close()
        ends = [e for e in dm.history() if e.kind == EventKind.SESSION_END]
    assert len(ends) == 1 and ends[0].content["reason"] == "idle"
