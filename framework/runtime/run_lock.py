"""One run at a time per room: an asyncio lock inside the process, a file lock across them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from filelock import AsyncFileLock
from filelock import Timeout as LockTimeout

from framework.errors import RoomBusyError


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
