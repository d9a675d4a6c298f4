"""``ingest.sqlite``: the ingest ledger of one process, in the data folder (the default).

:class:`SqliteLedgerFile` is the :class:`~framework.serving.ledger_backend.LedgerBackend` the
:class:`~framework.serving.ledger.IngestLedger` runs its SQL on without a database. Processes
sharing one data folder share the file (WAL, a busy timeout), and its primary key lets each
``(session, key)`` in once, whichever of them claims it.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from framework.errors import StorageError

from .ledger_backend import COLUMNS, PENDING, Row, Statements

__all__ = ["SqliteLedgerFile"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS ingest (
    session TEXT NOT NULL,
    key TEXT NOT NULL,
    message_id TEXT NOT NULL,
    author TEXT NOT NULL,
    text TEXT NOT NULL,
    state TEXT NOT NULL,
    merged_into TEXT,
    result TEXT,
    seq INTEGER NOT NULL,
    created REAL NOT NULL,
    reply_to TEXT,
    opening INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    PRIMARY KEY (session, key)
);
CREATE INDEX IF NOT EXISTS ingest_pending ON ingest (state, seq);
CREATE INDEX IF NOT EXISTS ingest_created ON ingest (created);
CREATE TABLE IF NOT EXISTS sent (
    session TEXT NOT NULL,
    platform_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session, platform_id)
);
"""

_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
"""Seconds since 1970 (what ``created`` holds), from the host's clock, to the millisecond."""


class SqliteLedgerFile:
    """The ledger's tables in ``ingest.sqlite``: statements committed one by one."""

    now = _NOW
    ago = f"({_NOW} - ?)"
    disown = ""  # one file, no owners: a message in the queue is anyone's

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        """Use ``conn`` (:meth:`open` made it, in autocommit mode) on ``path``."""
        self._conn = conn
        self._conn.row_factory = sqlite3.Row
        self.path = path
        self._serial = asyncio.Lock()
        self.owner = f"pid{os.getpid()}-{secrets.token_hex(4)}"
        """This process's name on the rows it queued (see :meth:`mine`)."""

    @classmethod
    async def open(cls, path: Path) -> SqliteLedgerFile:
        """Open (creating) the file and its tables. :class:`StorageError` if it cannot be
        opened or used (damaged: with the way out)."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: each statement commits on its own (none needs more).
            conn = await aiosqlite.connect(path, timeout=30, isolation_level=None)
        except (OSError, aiosqlite.Error) as exc:
            raise StorageError(f"cannot open the ingest ledger {path}: {exc}") from exc
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.executescript(_SCHEMA)
            columns = [row[1] for row in await conn.execute_fetchall("PRAGMA table_info(ingest)")]
            if "reply_to" not in columns:  # a ledger from before replies were kept
                await conn.execute("ALTER TABLE ingest ADD COLUMN reply_to TEXT")
            if "opening" not in columns:  # from before policies were decided here
                await conn.execute(
                    "ALTER TABLE ingest ADD COLUMN opening INTEGER NOT NULL DEFAULT 0"
                )
                await conn.execute("ALTER TABLE ingest ADD COLUMN owner TEXT")
        except aiosqlite.Error as exc:
            await conn.close()
            raise StorageError(
                f"cannot use the ingest ledger {path}: {exc}; move it aside (redeliveries of "
                "older messages are then recognised by the session logs' ids alone)"
            ) from exc
        return cls(conn, path)

    @property
    def where(self) -> Path:
        """The file, for messages."""
        return self.path

    def new_row(self) -> tuple[str, str, tuple[Any, ...]]:
        """``seq`` (one more than the file's last: the file's write lock makes it unique),
        ``created`` and the process that queued it."""
        seq = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM ingest)"
        return "seq, created, owner", f"{seq}, {_NOW}, ?", (self.owner,)

    def mine(self, alias: str) -> tuple[str, tuple[Any, ...]]:
        """This process's rows: processes sharing the file each keep their own order and
        policy, as before the ledger decided them (no sweep adopts a dead one's rows)."""
        return f" AND {alias}owner = ?", (self.owner,)

    def admit(self, field: str, value: str | None) -> None:
        """SQLite's text holds any character: nothing is refused."""

    async def take_orphans(self) -> list[Row]:
        """Every unanswered message, now this process's (the gateway asks once, as it
        opens: what a process that stopped or crashed left)."""
        return await self.rows(
            f"UPDATE ingest SET owner = ?, state = 'queued' WHERE {PENDING} RETURNING {COLUMNS}",
            (self.owner,),
        )

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        cursor = await self._conn.execute(sql, args)
        return cursor.rowcount

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row ``sql`` selects, by column name."""
        # One trip to aiosqlite's thread (execute, fetch and close there): a lookup per
        # platform reply is on the adapters' path.
        return [dict(row) for row in await self._conn.execute_fetchall(sql, args)]

    @asynccontextmanager
    async def serial(self, session: str) -> AsyncIterator[Statements]:
        """This process's blocks one at a time. Not a transaction: the one connection is
        shared by every task of the process, and a rollback would drop their writes too. So
        processes sharing a data folder without a database each decide a room's policy for
        the messages they receive (the guide on several processes says so)."""
        async with self._serial:
            yield self

    async def close(self) -> None:
        """Close the file."""
        await self._conn.close()
