"""The SOP store's tables on PostgreSQL: replicas sharing one database share SOP versions,
reviews, trials and outcomes with the guarantees ``sops.sqlite`` gives processes sharing a file.

:class:`PgSopConnection` is the :class:`~framework.sop.backend.SopBackend` over a replica's
:class:`~framework.database.pool.Database`. The store's SQL is written once, as for SQLite;
this module turns it into PostgreSQL's: ``?`` becomes ``%s`` (a literal ``%`` is escaped) and
each table name gets the ``staffroom_sop_`` prefix of ``pg_schema.sql``, so the tables do not
clash with other features' (``staffroom_ingest``, ``staffroom_leases``, LangGraph's
``checkpoints*``) or anything else in the database.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from framework.database.advisory_keys import name_key
from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database
from framework.database.url import redact
from framework.errors import StorageError

from .backend import Row

if TYPE_CHECKING:  # the `postgres` extra, present whenever a Database is open
    from psycopg import AsyncConnection

__all__ = ["FEATURE", "LOCK_CLASS", "PgSopConnection", "migrations", "to_postgres"]

FEATURE = "sop"
"""The SOP store's name in ``staffroom_migrations``."""

LOCK_CLASS = 0x534F50  # "SOP"
"""The first key of the two-key advisory locks on SOP ids (the second: the id's
:func:`~framework.database.advisory_keys.name_key`)."""

_TABLES = re.compile(
    r'"references"|\b(sops|versions|change_log|approvals|reviewers|trials|outcomes|'
    r"replacements)\b"
)

# Which connection, if any, holds the write transaction of the running task: reads inside a
# write go through it, so they see the transaction's own writes, as they do on the one SQLite
# connection, and never wait for a second pooled connection while holding the first.
_IN_WRITE: ContextVar[tuple[PgSopConnection, AsyncConnection[Any]] | None] = ContextVar(
    "sop_write_transaction", default=None
)


def migrations() -> list[Migration]:
    """The steps that make the SOP store's tables (``pg_schema.sql``). A change after release
    is a new step (``Migration(FEATURE, 2, "ALTER TABLE ...")``), never an edit of the file:
    databases that applied step 1 never run it again."""
    sql = resources.files("framework.sop").joinpath("pg_schema.sql").read_text("utf-8")
    return [Migration(FEATURE, 1, sql)]


@lru_cache(maxsize=256)
def to_postgres(sql: str) -> str:
    """The store's SQL (SQLite's table names, ``?`` placeholders) as PostgreSQL runs it.
    The store passes every value as a parameter: no literal in its SQL holds a ``?`` or a
    table's name for this to rewrite by mistake."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    return _TABLES.sub(lambda m: "staffroom_sop_" + (m.group(1) or "references"), sql)


class _PgTransaction:
    """The open transaction :meth:`PgSopConnection.write` yields."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        cursor = await self._conn.execute(to_postgres(sql), tuple(args))
        return cursor.rowcount


class PgSopConnection:
    """The SOP store's tables in one PostgreSQL database, through a replica's pool."""

    def __init__(self, db: Database) -> None:
        """Use ``db`` (already migrated: see :meth:`open`); the pool stays its owner's."""
        self._db = db

    @classmethod
    async def open(cls, db: Database) -> PgSopConnection:
        """Create or migrate the tables (once, whichever replica comes first) and use ``db``.
        :class:`StorageError` if the database refuses."""
        from psycopg import Error

        try:
            await apply_migrations(db, migrations())
        except Error as exc:  # the server's words: no password in them
            raise StorageError(
                f"cannot create the SOP store's tables in {redact(db.url)}: {exc}"
            ) from exc
        return cls(db)

    @property
    def where(self) -> str:
        """The database, for messages (its URL without the password)."""
        return f"{redact(self._db.url)} (tables staffroom_sop_*)"

    def json_length(self, column: str) -> str:
        """The SQL for the length of the JSON array held as text in ``column``."""
        return f"json_array_length({column}::json)"

    async def close(self) -> None:
        """Nothing to close: the pool is the replica's, shared with its other stores."""

    @asynccontextmanager
    async def write(self, key: str = "") -> AsyncIterator[_PgTransaction]:
        """One transaction, after every other writer of ``key`` (an SOP id) on any replica.

        Why an advisory lock and not SERIALIZABLE: the store's writes read then write (the
        next version number, the approvals before a publish, the open trial), and SQLite's
        BEGIN IMMEDIATE makes them wait for each other rather than fail. SERIALIZABLE would
        fail one of two racing writers, and the block cannot be run again from here (it is
        the caller's code, and may have raised its own error meanwhile). A transaction-scoped
        advisory lock keyed on the SOP id, taken first, makes writers of one SOP wait in turn
        (released at commit or rollback, even if the connection drops); under READ COMMITTED
        each later statement then sees what the previous holder committed. Writers of
        different SOPs do not wait for each other: nothing the store writes spans two SOPs.
        """
        from psycopg import Error

        try:
            async with self._db.connection() as conn, conn.transaction():
                if key:
                    await conn.execute(
                        "SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, name_key(key))
                    )
                token = _IN_WRITE.set((self, conn))
                try:
                    yield _PgTransaction(conn)
                finally:
                    _IN_WRITE.reset(token)
        except Error as exc:
            raise StorageError(f"cannot write to SOP store {self.where}: {exc}") from exc

    async def write_one(self, sql: str, args: Sequence[Any]) -> None:
        """One statement, in autocommit: atomic on its own, no lock to wait for."""
        from psycopg import Error

        try:
            async with self._db.connection() as conn:
                await conn.execute(to_postgres(sql), tuple(args))
        except Error as exc:
            raise StorageError(f"cannot write to SOP store {self.where}: {exc}") from exc

    async def rows(self, sql: str, *args: Any) -> list[Row]:
        """Every row ``sql`` selects (inside :meth:`write`: on its transaction)."""
        from psycopg import Error

        try:
            held = _IN_WRITE.get()
            if held is not None and held[0] is self:
                return await _fetch(held[1], sql, args)
            async with self._db.connection() as conn:
                return await _fetch(conn, sql, args)
        except Error as exc:
            raise StorageError(f"cannot read the SOP store {self.where}: {exc}") from exc

    async def optional_rows(self, sql: str, *args: Any) -> list[Row]:
        """:meth:`rows`: the tables are always there (made when the store is opened)."""
        return await self.rows(sql, *args)


async def _fetch(conn: AsyncConnection[Any], sql: str, args: Sequence[Any]) -> list[Row]:
    cursor = await conn.execute(to_postgres(sql), tuple(args))
    return [dict(row) for row in await cursor.fetchall()]
