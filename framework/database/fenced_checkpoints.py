"""LangGraph's PostgreSQL checkpointer, fenced by room leases: a stale replica cannot write.

Two replicas writing one thread with a plain ``AsyncPostgresSaver`` both succeed, and the
checkpoint chain forks (langgraph #8796): the checkpointer has no notion of who may write. A
lease alone does not help either, since a replica paused past its lease's expiry (SIGSTOP, a
long GC, a partition) wakes up still believing it holds the room. So every write here runs in
one transaction that first checks, under ``FOR SHARE``, that this replica's lease on the
thread (owner and epoch, ``leases.py``) is still the live one: a takeover (which updates the
lease row) waits for a write in flight to commit, and a write after a takeover finds the
epoch bumped and is refused with :class:`LeaseLostError`, nothing written. Reads are not
fenced. The thread id is the room's session key. A write takes one round trip whatever
LangGraph sends in it: ``BEGIN``, the fence, its statements and ``COMMIT`` in one string
(``fenced_write.py``).

This module needs the ``postgres`` extra (langgraph-checkpoint-postgres); import it only when
a database is configured.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    copy_checkpoint,
)
from langgraph.checkpoint.postgres import _ainternal
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.postgres.base import (
    PRUNE_DELETE_THREADS_SQL,
    PRUNE_STRATEGIES,
    _keep_latest,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import AsyncConnection, AsyncCursor, AsyncPipeline
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from framework.database.fenced_write import FENCE_SQL, BatchedWrite, FenceRefused
from framework.database.leases import LEASE_MIGRATIONS, Lease
from framework.database.migrations import apply_migrations
from framework.database.pool import Database
from framework.database.prune_statements import execute_pruning
from framework.errors import LeaseLostError, StorageError

__all__ = ["FencedPostgresSaver", "open_checkpoints"]

_SETUP_LOCK_KEY = 0x5374_6166_67  # next to the migrations' key ("Staff" + 1)
_TRY_LOCK = "SELECT pg_try_advisory_lock(%s) AS got"
_HOLDER_SQL = (
    "SELECT owner, epoch, expires_at > now() AS live FROM staffroom_leases WHERE session = %s"
)

# The thread whose write the current task is making: set by the writing methods, read by
# `_cursor`, which is where LangGraph's own write code gets its connection. A ContextVar, so
# concurrent writes of several rooms (one task each) do not see each other's thread.
_WRITING: ContextVar[str | None] = ContextVar("staffroom_fenced_write", default=None)
# The fenced write the current task has open (its thread, its cursor): LangGraph's write
# methods called inside it add their statements to it (a checkpoint and the writes held).
_OPEN: ContextVar[tuple[str, BatchedWrite] | None] = ContextVar("staffroom_open", default=None)

_Writes = tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]
"""What ``aput_writes`` was given: config, writes, task id, task path."""


class FencedPostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` whose writes (``aput``, ``aput_writes``, ``adelete_thread``,
    ``aprune``) are refused with :class:`LeaseLostError` unless this replica's lease on the
    thread, given by :meth:`fence`, is still the live one; checked in the write's own
    transaction. Use a pool (``Database.pool``) as ``conn``: each operation then takes its
    own connection and LangGraph's process-wide lock is not taken."""

    def __init__(
        self,
        conn: _ainternal.Conn,
        pipe: AsyncPipeline | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        if pipe is not None:  # a pipeline shares one transaction state across writes
            raise StorageError(
                "the fenced checkpointer runs each write in its own transaction: "
                "pass a pool or a connection, not a pipeline"
            )
        super().__init__(conn, serde=serde)
        self._fences: dict[str, Lease] = {}
        self._steps: dict[str, tuple[int, int]] = {}
        """Thread id -> the first and last step of the checkpoints saved since it was last
        asked (:meth:`take_steps`): what decides when a room's history is pruned."""
        self._held: dict[str, list[_Writes]] = {}
        """Thread id -> the pending writes held back during a run (:meth:`hold_writes`)."""
        self._read: dict[str, CheckpointTuple] = {}
        """Thread id -> its latest checkpoint as read under this replica's lease, kept for
        the reads after it until the thread is written (see :meth:`aget_tuple`)."""
        self._changes: dict[str, int] = {}
        """Thread id -> how often its cached read was dropped (a write, a lease taken or
        lost): a read that overlapped one is not kept."""

    def fence(self, thread_id: str, lease: Lease) -> None:
        """Writes to ``thread_id`` are allowed while ``lease`` is live (see ``Leases.hold``)."""
        self._fences[str(thread_id)] = lease
        self._forget_read(str(thread_id))

    def unfence(self, thread_id: str) -> None:
        """Writes to ``thread_id`` are refused from now on."""
        self._fences.pop(str(thread_id), None)
        self._forget_read(str(thread_id))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The thread's checkpoint (see ``AsyncPostgresSaver.aget_tuple``). A run reads its
        room's latest checkpoint several times before it writes (the room checks it and its
        pending writes, then LangGraph's loop loads it): under this replica's lease nobody
        else can write the thread, so every read until our next write of it (or a new lease)
        is given a copy of the first."""
        thread_id, conf = str(config["configurable"]["thread_id"]), config["configurable"]
        kept = self._read.get(thread_id)
        asked = conf.get("checkpoint_id")
        if thread_id not in self._fences or conf.get("checkpoint_ns"):
            return await super().aget_tuple(config)
        if kept is not None and asked in (None, kept.config["configurable"]["checkpoint_id"]):
            return _copy(kept)  # the latest, or the checkpoint asked for by id, which it is
        if asked:
            return await super().aget_tuple(config)
        changes = self._changes.get(thread_id, 0)
        found = await super().aget_tuple(config)
        # Kept only if nothing changed while it was read (a write, the lease): else stale.
        same = changes == self._changes.get(thread_id, 0)
        if found is not None and same and thread_id in self._fences:
            self._read[thread_id] = _copy(found)
        return found

    def _forget_read(self, thread_id: str) -> None:
        self._read.pop(thread_id, None)
        self._changes[thread_id] = self._changes.get(thread_id, 0) + 1

    def fenced_by(self, thread_id: str) -> Lease | None:
        """The lease that fences ``thread_id``'s writes now, if any."""
        return self._fences.get(str(thread_id))

    def take_steps(self, thread_id: str) -> tuple[int, int] | None:
        """The first and last LangGraph step of the checkpoints this saver has saved for
        ``thread_id`` (its root graph) since the last call, or None if none; forgotten here."""
        return self._steps.pop(str(thread_id), None)

    def hold_writes(self, thread_id: str) -> None:
        """While a run of ``thread_id`` goes on: hold its pending writes back and send them in
        the transaction of its next checkpoint (one write where there were two, LangGraph
        saving a task's writes and then, at the step's end, the checkpoint that applies
        them); :meth:`release_writes` sends what is still held when the run ends."""
        self._held[str(thread_id)] = []

    async def release_writes(self, thread_id: str) -> None:
        """The run of ``thread_id`` ended: write the pending writes still held (an
        interrupt's, an error's), in one fenced transaction; hold no more."""
        held = self._held.pop(str(thread_id), None)
        if held:
            with _writing(thread_id):
                async with self._cursor(pipeline=True):  # the writes below join it
                    for writes in held:
                        await super().aput_writes(*writes)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Save a checkpoint (with the pending writes held back, if any), if this replica
        still holds the thread's lease."""
        thread_id = str(config["configurable"]["thread_id"])
        held = self._held.get(thread_id)
        with _writing(thread_id):
            if not held:
                saved = await super().aput(config, checkpoint, metadata, new_versions)
            else:
                pending, held[:] = list(held), []
                async with self._cursor(pipeline=True):  # one transaction: all join it
                    for writes in pending:
                        await super().aput_writes(*writes)
                    saved = await super().aput(config, checkpoint, metadata, new_versions)
        step = metadata.get("step")
        if isinstance(step, int) and not config["configurable"].get("checkpoint_ns"):
            first, _ = self._steps.get(thread_id, (step, step))
            self._steps[thread_id] = (min(first, step), step)
        return saved

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes, if this replica still holds the thread's lease
        (during a run that holds writes back: with its next checkpoint, or at its end)."""
        held = self._held.get(str(config["configurable"]["thread_id"]))
        if held is not None:
            held.append((config, writes, task_id, task_path))
            return
        with _writing(config["configurable"]["thread_id"]):
            await super().aput_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete a thread's checkpoints, if this replica still holds its lease."""
        with _writing(thread_id):
            await super().adelete_thread(thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune each thread (see ``AsyncPostgresSaver.aprune``) in a transaction of its own
        that this replica's lease on it fences; a thread whose lease is not ours is refused."""
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread IDs, not a str")
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        for thread_id in (str(t) for t in thread_ids):
            self._forget_read(thread_id)
            async with (
                self._connection() as conn,
                conn.transaction(),
                conn.cursor(binary=True, row_factory=dict_row) as cur,
            ):
                if strategy == "delete":
                    await self._check_fence(cur, thread_id)
                    for sql in PRUNE_DELETE_THREADS_SQL:
                        await cur.execute(sql, ([thread_id],))
                    continue
                statements = _keep_latest(thread_id)
                # Its isolation level must be the transaction's first statement.
                sql, params, _ = next(statements)
                await cur.execute(sql, params)
                await self._check_fence(cur, thread_id)
                await execute_pruning(cur, statements)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        thread_id = _WRITING.get()
        if thread_id is None:
            if pipeline:  # LangGraph writes with pipeline=True: a write path not fenced here
                raise LeaseLostError(
                    "a checkpoint write that names no room was refused (unfenced write path)"
                )
            async with (
                self._connection() as conn,
                conn.cursor(binary=True, row_factory=dict_row) as cur,
            ):
                yield cur
            return
        joined = _OPEN.get()
        if joined is not None and joined[0] == thread_id:  # a write inside one already open
            yield joined[1]
            return
        self._forget_read(thread_id)  # written: the next read goes to the database
        lease = self._fences.get(thread_id)
        if lease is None:
            raise _unfenced(thread_id)
        # One round trip (fenced_write.py): the fence, LangGraph's statements and COMMIT in
        # one string; a fence that finds the lease gone stops it before anything is written.
        async with self._connection() as conn:
            write = BatchedWrite(conn)
            try:
                write.begin_fenced(thread_id, lease.owner, lease.epoch)
                token = _OPEN.set((thread_id, write))
                try:
                    yield write
                finally:
                    _OPEN.reset(token)
                try:
                    await write.commit()
                except FenceRefused:
                    async with conn.cursor(row_factory=dict_row) as cur:
                        raise await _lost(cur, thread_id, lease) from None
            except BaseException:
                with suppress(Exception):  # a broken connection: the pool replaces it
                    await write.abandon()
                raise
            finally:
                await write.close()
                self._forget_read(thread_id)  # and a read that overlapped the write

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[DictRow]]:
        # LangGraph's `self.lock` serialises every operation of the process; it protects a
        # single shared connection, so a pool's connections need not wait for it.
        if isinstance(self.conn, AsyncConnectionPool):
            async with self.conn.connection() as conn:
                yield conn
        else:
            async with self.lock:
                yield self.conn

    async def _check_fence(self, cur: AsyncCursor[DictRow], thread_id: str) -> None:
        """Inside the write's transaction: raise (so it rolls back) unless our lease is live."""
        lease = self._fences.get(thread_id)
        if lease is None:
            raise _unfenced(thread_id)
        await cur.execute(FENCE_SQL, (thread_id, lease.owner, lease.epoch))
        if await cur.fetchone() is not None:
            return
        raise await _lost(cur, thread_id, lease)


def _copy(found: CheckpointTuple) -> CheckpointTuple:
    """A copy a reader may change (LangGraph applies writes to a checkpoint it loaded)."""
    return found._replace(
        checkpoint=copy_checkpoint(found.checkpoint),
        metadata=found.metadata.copy(),
        pending_writes=list(found.pending_writes or []),
    )


def _unfenced(thread_id: str) -> LeaseLostError:
    return LeaseLostError(
        f"room {thread_id}: this replica holds no lease on it, so its checkpoint write "
        "was refused and nothing was written; run the room under its lease "
        "(Leases.hold with this checkpointer as the fence)"
    )


async def _lost(cur: AsyncCursor[DictRow], thread_id: str, lease: Lease) -> LeaseLostError:
    """The refusal of a write under ``lease``, naming who holds the room now (if anyone)."""
    await cur.execute(_HOLDER_SQL, (thread_id,))
    row = await cur.fetchone()
    if row is not None and row["live"] and row["owner"] != lease.owner:
        now = f"replica {row['owner']} runs it now (epoch {row['epoch']})"
    else:
        now = "it expired before this replica renewed it"
    return LeaseLostError(
        f"room {thread_id}: this replica lost its lease (epoch {lease.epoch}): {now}; "
        "its checkpoint write was refused and nothing was written; the room goes on "
        "where its lease is held: send the room's requests there, or reopen it"
    )


@contextmanager
def _writing(thread_id: Any) -> Iterator[None]:
    token = _WRITING.set(str(thread_id))
    try:
        yield
    finally:
        _WRITING.reset(token)


async def open_checkpoints(db: Database) -> FencedPostgresSaver:
    """The fenced checkpointer on ``db``'s pool, the lease table and LangGraph's tables
    created first (its ``setup()`` is not safe to run from several replicas at once, so one
    replica runs it at a time, under an advisory lock, on the locked connection)."""
    await apply_migrations(db, LEASE_MIGRATIONS)
    async with _setup_lock(db) as conn:
        await AsyncPostgresSaver(conn).setup()
    return FencedPostgresSaver(db.pool)


@asynccontextmanager
async def _setup_lock(db: Database) -> AsyncIterator[Any]:
    """An advisory lock for LangGraph's ``setup()``, taken by polling, not by waiting.

    ``setup()`` runs ``CREATE INDEX CONCURRENTLY``, which waits for every transaction of the
    database that is older than it, and a replica blocked in ``pg_advisory_lock`` is one: the
    holder waits for the waiter, the waiter for the holder, and PostgreSQL kills one of them
    (deadlock detected). A replica polling ``pg_try_advisory_lock`` holds no transaction open
    between tries. Its own key, not the migrations' one: ``migration_lock`` waits blocking.
    """
    async with db.connection() as conn:
        while True:
            row = await (await conn.execute(_TRY_LOCK, (_SETUP_LOCK_KEY,))).fetchone()
            if row is not None and row["got"]:
                break
            await asyncio.sleep(0.05)
        try:
            yield conn
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK_KEY,))
