"""One run at a time per room.

Without a database: an asyncio lock inside the process and a file lock across processes on
one machine (:class:`RunLock`). With one: the asyncio lock and the room's lease on the
database (:class:`LeasedRunLock`), which also fences what the run writes — the checkpointer
refuses a write whose lease epoch is no longer current, and the session log stamps each line
with the epoch, refuses appends once the lease is gone, and readers drop the lines of a
replica that lost the room (``framework/sessions/log_fence.py``). No file lock is trusted
across machines.
"""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from filelock import AsyncFileLock
from filelock import Timeout as LockTimeout

from framework.database.leases import HeldLease
from framework.database.retention import prune_if_due
from framework.errors import LeaseLostError, RoomBusyError
from framework.sessions.jsonl_log import JsonlLog

if TYPE_CHECKING:
    from framework.database.leases import Lease, Leases

__all__ = ["FencedSaver", "LeasedRunLock", "RunGuard", "RunLock"]


class RunGuard(Protocol):
    """What a :class:`~framework.runtime.room.Room` holds while it runs (``async with``)."""

    def locked(self) -> bool:
        """Whether a run holds the room in this process."""
        ...

    async def __aenter__(self) -> None: ...

    async def __aexit__(self, *exc: object) -> None: ...


@runtime_checkable
class FencedSaver(Protocol):
    """A checkpointer that writes a thread only under the lease it was given."""

    def fence(self, thread_id: str, lease: Lease) -> None: ...

    def unfence(self, thread_id: str) -> None: ...


class RunLock:
    """Hold a room's in-process and inter-process run locks (``async with``)."""

    def __init__(self, key: str, lock_path: Path, timeout: float) -> None:
        self.key = key
        self.timeout = timeout
        self.local = asyncio.Lock()
        self._file = AsyncFileLock(str(lock_path), thread_local=False)

    def locked(self) -> bool:
        """Whether a run holds the room in this process."""
        return self.local.locked()

    async def __aenter__(self) -> None:
        await self.local.acquire()
        try:
            await self._file.acquire(timeout=self.timeout)
        except LockTimeout as exc:
            self.local.release()
            raise RoomBusyError(
                f"room {self.key} is being run by another process; try again when it is done"
            ) from exc

    async def __aexit__(self, *exc: object) -> None:
        await self._file.release()
        self.local.release()


class LeasedRunLock:
    """Hold a room's lease on the database for a run (``async with``): taken (waiting up to
    ``timeout`` for another replica's run to end), renewed while the run goes on, and given
    back at its end. While held, the checkpointer and the log are fenced by its epoch."""

    def __init__(
        self, key: str, leases: Leases, saver: FencedSaver, log: JsonlLog, timeout: float
    ) -> None:
        self.key = key
        self.timeout = timeout
        self.local = asyncio.Lock()
        self._leases = leases
        self._saver = saver
        self._log = log
        self._hold: AbstractAsyncContextManager[HeldLease] | None = None
        self._held: HeldLease | None = None
        """The lease while a run holds it."""

    def locked(self) -> bool:
        """Whether a run holds the room in this process."""
        return self.local.locked()

    async def __aenter__(self) -> None:
        await self.local.acquire()
        try:
            hold = self._leases.hold(self.key, wait=self.timeout, fence=self._saver)
            held = await hold.__aenter__()
        except BaseException:
            self.local.release()
            raise
        self._hold = hold
        self._held = held
        # Before the run reads the log or its checkpoint: lines the previous holder appends
        # from now on are stale to every reader (framework/sessions/log_fence.py).
        self._log.fence = held
        try:
            self._log.mark_epoch()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: object) -> None:
        # The log keeps the released lease as its fence: what the room's background work
        # appends after the run carries this epoch (dropped by readers once another replica
        # has taken the room), never none (which a fenced log refuses).
        hold, held = self._hold, self._held
        self._hold, self._held = None, None
        try:
            if hold is not None:
                if held is not None and _still_held(held):
                    # Retention, while the lease is still ours: every PRUNE_EVERY_STEPS steps
                    # the room keeps its latest checkpoint only (all that resume needs;
                    # rebuild and replay read the log).
                    await prune_if_due(self._saver, self.key)
                await hold.__aexit__(None, None, None)
        finally:
            self.local.release()


def _still_held(held: HeldLease) -> bool:
    try:
        held.check()
    except LeaseLostError:
        return False
    return True
