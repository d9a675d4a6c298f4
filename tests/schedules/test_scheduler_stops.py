"""A scheduler asked to stop stops, even when its tick is stuck on its store."""

from __future__ import annotations

import asyncio
import sqlite3

from framework import Staffroom
from framework.data_folder import DataFolder
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler


async def test_stopping_cancels_a_tick_that_waits_on_a_locked_store(staff: Staffroom) -> None:
    if await staff.stores.database() is not None:
        return  # the file lock below is SQLite's; the database's outage is tests/database's
    store = await open_fire_store(staff.settings.data_dir, None)
    scheduler = Scheduler(staff, store, Runner(staff), tick_seconds=0.05)
    await scheduler.tick()  # the file exists, its tables too
    # Another process holds the file's write lock: every write of a tick waits for it.
    holder = sqlite3.connect(DataFolder(staff.settings.data_dir).schedules, timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    try:
        stop = asyncio.Event()
        running = asyncio.create_task(scheduler.run_forever(stop))
        await asyncio.sleep(0.3)  # a tick is now waiting on the lock
        assert not running.done()
        stop.set()
        await asyncio.wait_for(running, timeout=10)  # not the store's 30 s busy wait
    finally:
        holder.rollback()
        holder.close()
        await store.close()
