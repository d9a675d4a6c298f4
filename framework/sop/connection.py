"""The connection to ``sops.sqlite``: opening it, one write transaction at a time, reads.

:class:`~framework.sop.store.SopStore` holds one (or, on PostgreSQL,
:class:`~framework.sop.pg_connection.PgSopConnection`: both give
:class:`~framework.sop.backend.SopBackend`) and says what the rows mean; see its module for
how several processes share one file.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from framework.data_folder import DataFolder
from framework.errors import StorageError
from framework.sqlite_stores import connect_store

from .backend import Row
from .schema import prepare

__all__ = ["BUSY_TIMEOUT_S", "SopConnection", "open_connection"]

BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's transaction before giving up."""

_DAMAGED = (
    "restore it from a backup, or move it aside with `staffroom doctor --repair` (its SOP "
    "versions, metrics and drafts are then lost; sop_library/ cards are imported again)"
)


async def open_connection(path: str | Path) -> tuple[aiosqlite.Connection, Path]:
    """Open (creating and migrating if needed) the store at ``path``: a file, or a folder to
    hold ``sops.sqlite``; the connection and the file's path. :class:`StorageError` if it cannot
    be opened (damaged: with the way out)."""
    path = Path(path)
    if path.is_dir() or not path.suffix:
        path = DataFolder(path).sops
    folder = DataFolder(path.parent)
    folder.check_stores(path.name)  # lost, not new: never recreated empty without a word
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # timeout is SQLite's busy timeout; isolation_level=None: no implicit transactions,
        # each write says BEGIN itself.
        conn = await connect_store(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"cannot open SOP store {path}: {exc}") from exc
    try:
        await prepare(conn)
    except BaseException as exc:
        await conn.close()  # else its worker thread keeps the process alive
        if isinstance(exc, sqlite3.Error):  # damage is a StorageError already
            raise StorageError(f"cannot use the SOP store {path}: {exc}; {_DAMAGED}") from exc
        raise
    folder.record(path.name)
    return conn, path


class _SqliteTransaction:
    """The open ``BEGIN IMMEDIATE`` transaction :meth:`SopConnection.write` yields."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        cursor = await self._conn.execute(sql, args)
        return cursor.rowcount


class SopConnection:
    """One open ``sops.sqlite``: write transactions that never overlap, and reads."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        """Wrap a connection :func:`open_connection` opened."""
        self._conn = conn
        self._conn.row_factory = sqlite3.Row
        # One connection serves every task of this process: transactions must not overlap on it.
        self._lock = asyncio.Lock()
        self.path = path

    async def close(self) -> None:
        """Close the connection."""
        await self._conn.close()

    @property
    def where(self) -> Path:
        """The file, for messages."""
        return self.path

    def json_length(self, column: str) -> str:
        """The SQL for the length of the JSON array held as text in ``column``."""
        return f"json_array_length({column})"

    @asynccontextmanager
    async def write(self, key: str = "") -> AsyncIterator[_SqliteTransaction]:
        """One write transaction: committed when the block ends, rolled back if it raises.
        ``key`` (what it guards) changes nothing here: SQLite locks the whole file."""
        # IMMEDIATE takes the write lock up front: a deferred transaction that reads and
        # then writes can fail with SQLITE_BUSY at the upgrade, which the busy timeout
        # does not retry.
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield _SqliteTransaction(self._conn)
                    await self._conn.execute("COMMIT")
                except BaseException:
                    await self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StorageError(f"cannot write to SOP store {self.path}: {exc}") from exc

    async def write_one(self, sql: str, args: Sequence[Any]) -> None:
        """One statement in its own write transaction."""
        async with self.write() as tx:
            await tx.execute(sql, args)

    async def rows(self, sql: str, *args: Any) -> list[Row]:
        """Every row ``sql`` selects, by column name (as on PostgreSQL)."""
        async with self._conn.execute(sql, args) as cursor:
            return [dict(row) for row in await cursor.fetchall()]

    async def optional_rows(self, sql: str, *args: Any) -> list[Row]:
        """:meth:`rows`, or none when the table is not there."""
        # A file opened read-only is never migrated: a table added since it was made is
        # read as empty rather than failing a read-only command.
        try:
            return await self.rows(sql, *args)
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
