"""Schema migrations: each feature's tables, applied once, by one replica at a time.

Replicas that start together would otherwise race on ``CREATE TABLE`` (LangGraph's
``setup()`` does: it is not safe to run concurrently), so every migration runs while the
session holds a PostgreSQL advisory lock (``pg_advisory_lock``), and ``staffroom_migrations``
records what was applied: running them again changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from framework.database.pool import Database
from framework.database.url import redact
from framework.errors import StorageError

__all__ = ["Migration", "apply_migrations", "migration_lock"]

LOCK_KEY = 0x5374_6166_66  # "Staff": one advisory lock id for every Staffroom migration

_LEDGER = """
CREATE TABLE IF NOT EXISTS staffroom_migrations (
    feature TEXT NOT NULL,
    version INTEGER NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (feature, version)
)
"""


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of one feature's schema (``version`` counts from 1 per feature)."""

    feature: str
    version: int
    sql: str
    """One or more statements, run in one transaction."""


@asynccontextmanager
async def migration_lock(db: Database) -> AsyncIterator[Any]:
    """Hold the migration advisory lock on one connection (yielded) for the block.

    Taken by polling ``pg_try_advisory_lock``, not by blocking in ``pg_advisory_lock``: a
    waiter blocked inside a statement is an open transaction, and a migration that runs
    ``CREATE INDEX CONCURRENTLY`` waits for every older transaction, so holder and waiter
    would wait for each other until PostgreSQL kills one (deadlock detected)."""
    async with db.connection() as conn:
        while True:
            row = await (
                await conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (LOCK_KEY,))
            ).fetchone()
            if row is not None and row["got"]:
                break
            await asyncio.sleep(0.05)
        try:
            yield conn
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


async def apply_migrations(
    db: Database, migrations: Sequence[Migration], *, what: str = "its tables"
) -> list[Migration]:
    """Apply the steps not applied yet, in order, under the lock; the ones applied now. A
    database error is a :class:`StorageError` saying it cannot keep ``what`` there (the
    server named without its password)."""
    try:
        return await _apply(db, migrations)
    except StorageError:
        raise
    except Exception as exc:  # psycopg's errors: the extra is imported with the pool
        raise StorageError(
            f"cannot keep {what} on {redact(db.url)}: {exc}; check that the database user "
            "may create tables there"
        ) from exc


async def _apply(db: Database, migrations: Sequence[Migration]) -> list[Migration]:
    applied: list[Migration] = []
    async with migration_lock(db) as conn:
        await conn.execute(_LEDGER)
        rows = await (
            await conn.execute("SELECT feature, version FROM staffroom_migrations")
        ).fetchall()
        done = {(row["feature"], row["version"]) for row in rows}
        for step in sorted(migrations, key=lambda m: (m.feature, m.version)):
            if (step.feature, step.version) in done:
                continue
            async with conn.transaction():
                await conn.execute(step.sql)
                await conn.execute(
                    "INSERT INTO staffroom_migrations (feature, version) VALUES (%s, %s)",
                    (step.feature, step.version),
                )
            applied.append(step)
    return applied
