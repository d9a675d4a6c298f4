"""A replica's presence among others on one database, and its sweep for what the gone left.

Each ``staffroom serve`` replica on a database holds the lease ``replica:<owner>`` while its
gateway is open (renewed like a room's). A message the ingest ledger holds records the
replica that queued it; when that replica's lease has expired (it was killed, or stopped
before it ran its queue), any other replica's sweep takes the message over, in one atomic
UPDATE, and runs it (:meth:`~framework.serving.ledger.IngestLedger.take_orphans`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from framework.database.pool import is_outage
from framework.serving.pg_ledger import REPLICA_PREFIX

if TYPE_CHECKING:
    from framework.database.leases import HeldLease, Leases

__all__ = ["Presence"]

log = logging.getLogger("staffroom.gateway")


class Presence:
    """Hold this replica's lease and sweep every ``every`` seconds (``start``/``stop``)."""

    def __init__(
        self, leases: Leases, owner: str, every: float, sweep: Callable[[], Awaitable[None]]
    ) -> None:
        self._leases = leases
        self._name = f"{REPLICA_PREFIX}{owner}"
        self._hold: AbstractAsyncContextManager[HeldLease] | None = None
        self._held: HeldLease | None = None
        self._every = every
        self._sweep = sweep
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Take the replica's lease; sweeping starts with :meth:`sweep_every`."""
        await self._take()

    async def _take(self) -> None:
        hold = self._leases.hold(self._name, wait=self._every)
        self._held = await hold.__aenter__()
        self._hold = hold  # only once taken: leave() gives back a lease held, nothing else

    def sweep_every(self) -> None:
        """Sweep in the background from now on."""
        self._task = asyncio.create_task(self._loop(), name="gateway sweep")

    async def stop_sweeping(self) -> None:
        """Stop the background sweep (before the lanes drain)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def leave(self) -> None:
        """Give the replica's lease back (after its queue ran: nothing is left to adopt)."""
        if self._hold is not None:
            await self._hold.__aexit__(None, None, None)
            self._hold = self._held = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            try:
                if self._held is None or self._held.lost.is_set():
                    # Paused or cut off past the lease: the others may have adopted what this
                    # replica had queued (its runs find those answered, in the log). Present
                    # again from now on, under a new lease; a take that failed (the database
                    # still down) is tried again at the next turn, not given up.
                    log.warning("this replica's presence lapsed; taking it again")
                    await self.leave()
                    await self._take()
                await self._sweep()
            except Exception as exc:  # a database hiccup: the next sweep tries again
                if not is_outage(exc):
                    log.exception("sweeping for orphaned messages failed")
                else:  # a restart or the network: expected, and said once per turn
                    log.warning("sweeping for orphaned messages: database unreachable: %s", exc)
