"""Where a scheduler's time comes from: the wall clock, or a simulated one in tests."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["Clock", "SystemClock"]


class Clock(Protocol):
    """Where the scheduler's time comes from (a simulated one in tests)."""

    def now(self) -> datetime:
        """Now, UTC-aware."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
