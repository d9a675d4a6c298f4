"""The scheduler as a server runs it: started with the gateway, stopped before it closes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

from framework.schedules.delivery import ChatDelivery
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.serving.gateway import Gateway

__all__ = ["RunningScheduler", "running_scheduler"]


@dataclass
class RunningScheduler:
    """A scheduler ticking in the background of a server."""

    scheduler: Scheduler

    def health(self) -> str:
        """``ok``, or ``stalled`` when it has not ticked for three tick periods."""
        last = self.scheduler.status().last_tick
        if last is None:
            return "starting"
        age = (self.scheduler.clock.now() - last).total_seconds()
        return "ok" if age <= 3 * self.scheduler.tick_seconds + 5 else "stalled"


@asynccontextmanager
async def running_scheduler(
    gateway: Gateway, *, tick_seconds: float | None = None, chat: ChatDelivery | None = None
) -> AsyncIterator[RunningScheduler]:
    """Run the project's schedules while the block runs (its fires' events reach the
    gateway's listeners: webhooks, chat platforms); on exit, stop ticking and let the fires
    under way finish. ``tick_seconds``: None is ``Settings.scheduler_tick``
    (``$STAFFROOM_SCHEDULER_TICK``, 5 s by default); ``chat``: the server's chat platforms
    (``deliver: {adapter, chat}``)."""
    staff = gateway.staff
    store = await open_fire_store(staff.settings.data_dir, await staff.stores.database())
    scheduler = Scheduler(staff, store, Runner(staff, gateway, chat), tick_seconds=tick_seconds)
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run_forever(stop), name="scheduler")
    try:
        yield RunningScheduler(scheduler)
    finally:
        stop.set()
        with suppress(asyncio.CancelledError):
            await task
        await store.close()
