"""Checkpoint retention: keep each room's latest checkpoint, drop the history behind it.

LangGraph keeps every checkpoint a room ever made (a dozen per turn), so the checkpoint
store grows without bound (langgraph #8531). Staffroom needs only where each room stands
now: a room resumes from its thread's latest checkpoint and that checkpoint's pending writes;
``staffroom doctor --repair`` rebuilds a room from its session log and ``replay`` reads the
log, never older checkpoints. So per thread and namespace the latest checkpoint is kept (and,
as LangGraph's own ``keep_latest`` does, its parent when an old-format checkpoint reads its
pending sends from there), its pending writes too, and the rest is deleted.

On PostgreSQL this is LangGraph's ``aprune(strategy="keep_latest")``. The fenced saver
refuses it for a room whose lease this replica does not hold, so a prune from outside a run
(the doctor) takes each room's lease first (waiting for nobody) and skips, naming the
holder, a room another replica runs. Retention is automatic there: the runtime prunes its own
room at the end of a run, while its lease is still held, once the room's history has grown by
:data:`PRUNE_EVERY_STEPS` steps (:func:`prune_if_due`; a prune costs about a dozen round trips,
so it is not paid after every run, and a room keeps at most that many steps' checkpoints
more than its latest one, plus those of its last run). SQLite's
saver has no prune: the same rule is written here in SQL, one transaction per call; it runs
only when asked (``staffroom doctor --prune``), so the embedded default is unchanged. Deleted
rows free pages inside the file; only ``VACUUM`` (:func:`reclaim_space`) gives them back.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from framework.errors import RoomBusyError, StaffroomError, StorageError

if TYPE_CHECKING:  # the `postgres` extra: imported only when a database is configured
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    from framework.database.leases import Leases

__all__ = [
    "PRUNE_EVERY_STEPS",
    "PruneReport",
    "prune_after_run",
    "prune_checkpoints",
    "prune_if_due",
    "reclaim_space",
]

log = logging.getLogger("staffroom.retention")

PRUNE_EVERY_STEPS = 20
"""A room's run ends with a prune when its checkpoints crossed a multiple of this many
LangGraph steps during the run (a free-chat message is two to four steps; a new room's first
run always prunes). The step count is the room's own, kept in its checkpoints, so it does not
matter which replica runs it or whether one restarted."""

_TASKS = "__pregel_tasks"  # LangGraph's channel of pending sends (langgraph.constants.TASKS)

# --- SQLite (tables `checkpoints` and `writes` of langgraph-checkpoint-sqlite) ---------------
_SQLITE_HEADS = """
SELECT thread_id, checkpoint_ns, MAX(checkpoint_id) AS head FROM checkpoints
{where} GROUP BY thread_id, checkpoint_ns
"""
# The parent a head reads its pending sends from (checkpoints before LangGraph's format 4);
# kept whatever the head's format, which at worst keeps one checkpoint too many.
_SQLITE_SENDS_PARENT = f"""
SELECT c.parent_checkpoint_id FROM checkpoints c
WHERE c.thread_id = ? AND c.checkpoint_ns = ? AND c.checkpoint_id = ?
AND c.parent_checkpoint_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM writes w WHERE w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns
    AND w.checkpoint_id = c.parent_checkpoint_id AND w.channel = '{_TASKS}')
"""
# Writes go by the checkpoints deleted, not by "not kept": a run may save a step's writes
# before the checkpoint they belong to, and those must survive.
_SQLITE_WRITES = """
DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id IN (
    SELECT checkpoint_id FROM checkpoints
    WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id NOT IN ({kept}))
"""
_SQLITE_CHECKPOINTS = """
DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id NOT IN ({kept})
"""
# As LangGraph's Postgres prune does: a kept checkpoint names no deleted parent.
_SQLITE_PARENTS = """
UPDATE checkpoints SET parent_checkpoint_id = NULL
WHERE thread_id = ? AND checkpoint_ns = ? AND parent_checkpoint_id NOT IN ({kept})
"""

# --- PostgreSQL (tables of langgraph-checkpoint-postgres) ------------------------------------
_PG_THREADS = "SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id"
_PG_COUNTS = """
SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %(t)s) AS checkpoints,
       (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %(t)s) AS writes
"""
_PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


@dataclass
class PruneReport:
    """What a prune removed, per thread, and the threads it left alone (and why)."""

    removed: dict[str, int] = field(default_factory=dict)
    """Thread id -> checkpoints deleted (0: it had only what it needs)."""
    writes_removed: int = 0
    """Pending writes deleted with those checkpoints."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Thread id -> why it was not pruned (another replica runs it; an error)."""

    @property
    def checkpoints_removed(self) -> int:
        """Checkpoints deleted, in all."""
        return sum(self.removed.values())


async def prune_checkpoints(
    saver: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None = None,
    *,
    leases: Leases | None = None,
) -> PruneReport:
    """Keep only each thread's latest checkpoint (per namespace) and what it needs, for
    ``thread_ids`` (None: every thread). On PostgreSQL a room's prune runs under its lease:
    one this replica holds already is used; else ``leases`` takes it for the prune, and a
    room another replica holds is skipped (so is every unheld room when ``leases`` is None).
    A :class:`~framework.errors.StorageError` from SQLite when the file cannot be written."""
    if isinstance(saver, AsyncSqliteSaver):
        return await _prune_sqlite(saver, thread_ids)
    postgres = _postgres_saver(saver)
    if postgres is None:
        raise TypeError(f"no retention for {type(saver).__name__}: SQLite or PostgreSQL only")
    return await _prune_postgres(postgres, thread_ids, leases)


async def prune_after_run(saver: object, thread_id: str) -> None:
    """Automatic retention on PostgreSQL: prune ``thread_id`` (one room) right after its run,
    while this replica still holds its lease (``saver``: the room's checkpointer, whatever
    its static type; the runtime's ``LeasedRunLock`` calls it on exit, before the release).
    Does nothing on other savers (SQLite prunes only when asked). Never raises: a failed
    prune only leaves history for the next one to delete, so it is logged as a warning."""
    postgres = _postgres_saver(saver)
    if postgres is None:
        return
    try:
        await postgres.aprune([str(thread_id)], strategy="keep_latest")
    except Exception as exc:  # a lost lease, a serialization failure, the network: next time
        log.warning("could not prune the checkpoints of room %s after its run: %s", thread_id, exc)


async def prune_if_due(saver: object, thread_id: str, every: int = PRUNE_EVERY_STEPS) -> bool:
    """At the end of a run, under the room's lease: prune ``thread_id`` (as
    :func:`prune_after_run`) if the checkpoints ``saver`` saved for it since the last call
    crossed a multiple of ``every`` steps; whether it pruned. Never raises."""
    take = getattr(saver, "take_steps", None)
    steps = take(str(thread_id)) if callable(take) else None
    if steps is None:  # nothing saved since the last call: nothing new to prune
        return False
    first, last = steps
    if last // every <= (first - 1) // every:
        return False
    await prune_after_run(saver, thread_id)
    return True


async def reclaim_space(saver: BaseCheckpointSaver[Any]) -> str | None:
    """Give the space of deleted checkpoints back: SQLite's ``VACUUM`` (the file shrinks;
    it needs a moment when no other process is writing it), PostgreSQL's plain ``VACUUM`` of
    the checkpoint tables (space reused by new rows, the tables' empty tails cut off; never
    ``VACUUM FULL``, which would lock every replica out). None when done, else why not."""
    try:
        if isinstance(saver, AsyncSqliteSaver):
            async with saver.lock:
                await saver.conn.execute("VACUUM")
                await saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return None
        postgres = _postgres_saver(saver)
        if postgres is None:
            return f"no space to reclaim in {type(saver).__name__}"
        async with _pg_connection(postgres) as conn:
            for table in _PG_TABLES:
                await conn.execute(f"VACUUM {table}")
        return None
    except Exception as exc:  # busy file, no privilege: the prune itself is done and kept
        return str(exc)


def _postgres_saver(saver: object) -> AsyncPostgresSaver | None:
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    except ImportError:  # no `postgres` extra: no saver of that kind can exist
        return None
    return saver if isinstance(saver, AsyncPostgresSaver) else None


async def _prune_sqlite(saver: AsyncSqliteSaver, thread_ids: Sequence[str] | None) -> PruneReport:
    report = PruneReport()
    conn = saver.conn
    await saver.setup()
    async with saver.lock:
        # IMMEDIATE: the write lock first, so the heads read are still the heads when deleting
        # (a run in another process waits for this transaction, then goes on after it).
        await conn.execute("BEGIN IMMEDIATE")
        try:
            where, params = "", tuple[str, ...]()
            if thread_ids is not None:
                where = f"WHERE thread_id IN ({', '.join('?' * len(thread_ids))})"
                params = tuple(str(t) for t in thread_ids)
            async with conn.execute(_SQLITE_HEADS.format(where=where), params) as cur:
                heads = [(str(r[0]), str(r[1]), str(r[2])) for r in await cur.fetchall()]
            for thread_id, ns, head in heads:
                kept = [head]
                async with conn.execute(_SQLITE_SENDS_PARENT, (thread_id, ns, head)) as cur:
                    kept += [str(r[0]) for r in await cur.fetchall()]
                marks = ", ".join("?" * len(kept))
                scope = (thread_id, ns)
                cur = await conn.execute(_SQLITE_WRITES.format(kept=marks), scope * 2 + (*kept,))
                report.writes_removed += max(cur.rowcount, 0)
                cur = await conn.execute(_SQLITE_CHECKPOINTS.format(kept=marks), (*scope, *kept))
                removed = max(cur.rowcount, 0)
                report.removed[thread_id] = report.removed.get(thread_id, 0) + removed
                await conn.execute(_SQLITE_PARENTS.format(kept=marks), (*scope, *kept))
            await conn.commit()
        except sqlite3.Error as exc:
            await conn.rollback()
            raise StorageError(
                f"could not prune the checkpoints: {exc}; nothing was deleted. Try again when "
                "no room is running (or restore the file from a backup if it is damaged)"
            ) from exc
        except BaseException:
            await conn.rollback()
            raise
    return report


async def _prune_postgres(
    saver: AsyncPostgresSaver, thread_ids: Sequence[str] | None, leases: Leases | None
) -> PruneReport:
    report = PruneReport()
    if thread_ids is None:
        async with _pg_connection(saver) as conn:
            rows = await (await conn.execute(_PG_THREADS)).fetchall()
        thread_ids = [str(row[0]) for row in rows]
    for thread_id in (str(t) for t in thread_ids):
        try:
            async with _under_lease(saver, thread_id, leases) as why_not:
                if why_not is not None:
                    report.skipped[thread_id] = why_not
                    continue
                before = await _pg_counts(saver, thread_id)
                await saver.aprune([thread_id], strategy="keep_latest")
                after = await _pg_counts(saver, thread_id)
        except (StaffroomError, NotImplementedError, OSError) as exc:
            report.skipped[thread_id] = str(exc)
            continue
        except Exception as exc:  # psycopg's (serialization failure, ...): this room only
            report.skipped[thread_id] = f"{type(exc).__name__}: {exc}"
            continue
        report.removed[thread_id] = max(before[0] - after[0], 0)
        report.writes_removed += max(before[1] - after[1], 0)
    return report


@asynccontextmanager
async def _under_lease(
    saver: AsyncPostgresSaver, thread_id: str, leases: Leases | None
) -> AsyncIterator[str | None]:
    """Run the block under ``thread_id``'s lease (None) or say why it cannot be (a reason)."""
    from framework.database.fenced_checkpoints import FencedPostgresSaver

    if not isinstance(saver, FencedPostgresSaver) or saver.fenced_by(thread_id) is not None:
        yield None  # unfenced, or this replica runs the room and holds its lease already
        return
    if leases is None:
        yield "this replica holds no lease on it"
        return
    hold = leases.hold(thread_id, wait=0, fence=saver)
    busy: str | None = None
    try:
        await hold.__aenter__()
    except RoomBusyError:
        holder = await leases.holder(thread_id)
        who = holder.owner if holder is not None else "another replica"
        busy = f"replica {who} is running it; prune it again when that replica is done with it"
    if busy is not None:
        yield busy
        return
    try:
        yield None
    finally:
        await hold.__aexit__(None, None, None)


async def _pg_counts(saver: AsyncPostgresSaver, thread_id: str) -> tuple[int, int]:
    async with _pg_connection(saver) as conn:
        row = await (await conn.execute(_PG_COUNTS, {"t": thread_id})).fetchone()
    if row is None:
        return 0, 0
    return int(row[0]), int(row[1])


@asynccontextmanager
async def _pg_connection(saver: AsyncPostgresSaver) -> AsyncIterator[Any]:
    """A cursor on a connection of the saver's (from its pool, or its own under its lock)
    that reads rows as tuples."""
    from psycopg.rows import tuple_row
    from psycopg_pool import AsyncConnectionPool

    if isinstance(saver.conn, AsyncConnectionPool):
        async with saver.conn.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            yield cur
        return
    async with saver.lock, saver.conn.cursor(row_factory=tuple_row) as cur:
        yield cur
