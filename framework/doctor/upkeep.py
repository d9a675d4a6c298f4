"""How big the checkpoint store is, who holds the rooms, and ``staffroom doctor --prune``.

The size is what an operator watches grow (langgraph #8531): on SQLite the checkpoint file
(with its write-ahead log) and its row counts, read raw and read-only as the checks do; on
PostgreSQL every table of LangGraph's and of Staffroom's own (``staffroom_*``) with
``pg_total_relation_size`` (indexes and TOAST included) and its rows. On PostgreSQL the live
room leases are listed too: which replica runs which room, at which epoch, until when.
Pruning itself is ``framework/database/retention.py``; here it is run over the whole store
with the sizes measured before and after.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

from framework.database.retention import PruneReport, prune_checkpoints, reclaim_space
from framework.database.url import redact
from framework.stores import Stores

__all__ = ["Footprint", "LeaseRow", "Pruned", "TableSize", "measure", "prune_store"]

_PG_TABLES = """
SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname = current_schema()
AND (c.relname IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes')
     OR c.relname LIKE 'staffroom\\_%')
ORDER BY c.relname
"""
_SQLITE_TABLES = ("checkpoints", "writes")


@dataclass(frozen=True, slots=True)
class TableSize:
    """One table: its rows, and its bytes when the store can tell (PostgreSQL)."""

    name: str
    rows: int
    bytes: int | None = None


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """A live room lease: who runs the room, at which epoch, for how many more seconds."""

    session: str
    owner: str
    epoch: int
    expires_in: float


@dataclass(slots=True)
class Footprint:
    """The checkpoint store's size: where, its tables, the total bytes, the rooms' leases."""

    where: str
    total_bytes: int = 0
    tables: list[TableSize] = field(default_factory=list)
    leases: list[LeaseRow] | None = None
    """None without a database (SQLite rooms have no leases)."""

    @property
    def checkpoints(self) -> int:
        """Checkpoints stored, in all threads."""
        return sum(t.rows for t in self.tables if t.name == "checkpoints")


@dataclass(frozen=True, slots=True)
class Pruned:
    """What ``--prune`` did: the report, the sizes around it, and why no space was
    reclaimed (None: it was)."""

    report: PruneReport
    before: Footprint
    after: Footprint
    not_reclaimed: str | None


async def measure(stores: Stores) -> Footprint:
    """The checkpoint store's size (and, on a database, its live leases); changes nothing."""
    db = await stores.database()
    if db is None:
        return _measure_sqlite(stores.folder.checkpoints)
    found = Footprint(redact(db.url), leases=[])
    async with db.connection() as conn:
        tables = await (await conn.execute(_PG_TABLES)).fetchall()
        for row in tables:
            name = str(row["name"])
            # Names from pg_class, quoted: the only way to count rows of a table by name.
            counted = await (await conn.execute(f'SELECT count(*) AS n FROM "{name}"')).fetchone()
            rows = int(counted["n"]) if counted is not None else 0
            found.tables.append(TableSize(name, rows, int(row["bytes"])))
        now = await (await conn.execute("SELECT now() AS now")).fetchone()
    found.total_bytes = sum(t.bytes or 0 for t in found.tables)
    leases = await stores.leases()
    if (
        leases is not None
        and now is not None
        and any(t.name == "staffroom_leases" for t in found.tables)
    ):
        found.leases = [
            LeaseRow(
                lease.session,
                lease.owner,
                lease.epoch,
                max((lease.expires_at - now["now"]).total_seconds(), 0.0),
            )
            for lease in await leases.holders()
        ]
    return found


def _measure_sqlite(path: Path) -> Footprint:
    found = Footprint(str(path))
    if not path.is_file():
        return found
    found.total_bytes = sum(
        p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.is_file()
    )
    # Raw and read-only, as the checks read it: the Stores would create tables in it.
    query = "mode=ro" if os.access(path.parent, os.W_OK) else "mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(f"file:{path}?{query}", uri=True)
        try:
            for table in _SQLITE_TABLES:
                try:
                    row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
                except sqlite3.OperationalError:  # no such table: nothing ran yet
                    continue
                found.tables.append(TableSize(table, int(row[0])))
        finally:
            conn.close()
    except sqlite3.Error:  # damaged: the checks report it; the size is still the file's
        pass
    return found


async def prune_store(stores: Stores) -> Pruned:
    """Keep each room's latest checkpoint only (every room of the store; on PostgreSQL each
    under its lease, rooms another replica runs skipped), then reclaim the space (SQLite:
    ``VACUUM``, the file shrinks; PostgreSQL: plain ``VACUUM``)."""
    before = await measure(stores)
    if await stores.database() is None and not stores.folder.checkpoints.is_file():
        return Pruned(PruneReport(), before, before, None)  # nothing ran: nothing to create
    saver = await stores.checkpoints()
    report = await prune_checkpoints(saver, None, leases=await stores.leases())
    not_reclaimed = await reclaim_space(saver)
    return Pruned(report, before, await measure(stores), not_reclaimed)
