"""A run's pending writes held back until its next checkpoint, on a checkpointer that can.

LangGraph saves each task's pending writes as the task ends and, at the end of the step, the
checkpoint that applies them: two fenced transactions per step on PostgreSQL. The fenced
checkpointer can hold the writes back and send them in the checkpoint's transaction
(``FencedPostgresSaver.hold_writes``): nothing is written later than the step's checkpoint,
which ``durability="sync"`` writes before the next step runs. What is still held when the run
ends (an interrupt's writes, an error's) is written then. Other checkpointers write as usual.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Protocol, runtime_checkable

__all__ = ["holding_writes"]


@runtime_checkable
class _HoldsWrites(Protocol):
    def hold_writes(self, thread_id: str) -> None: ...

    async def release_writes(self, thread_id: str) -> None: ...


@asynccontextmanager
async def holding_writes(saver: object, thread_id: str) -> AsyncIterator[None]:
    """Hold ``thread_id``'s pending writes back on ``saver`` for the block (one run)."""
    if not isinstance(saver, _HoldsWrites):
        yield
        return
    saver.hold_writes(thread_id)
    try:
        yield
    except BaseException:
        with suppress(Exception):  # the run's own error is the one to report
            await saver.release_writes(thread_id)
        raise
    await saver.release_writes(thread_id)
