"""The SOP store's connection: opening ``sops.sqlite``, write transactions, row helpers.

:class:`~framework.sop.store.SopStore` builds on :class:`StoreBase`; see its module for how
several processes share one file.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Self

import aiosqlite

from framework.data_folder import DataFolder, connect_store
from framework.errors import StorageError

from .model import SopVersion, Status, Step
from .schema import prepare

BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's transaction before giving up."""


def same_content(a: SopVersion, b: SopVersion) -> bool:
    """True if two versions describe the same procedure (goal, scope, steps, body).

    Status, approvals and change_log are left out on purpose: they change over a version's
    life (review, deprecation) while the procedure itself never does.
    """
    return (a.goal, a.scope, a.steps, a.body.strip()) == (b.goal, b.scope, b.steps, b.body.strip())


def step_from_row(item: dict[str, Any]) -> Step:
    lists = {k: tuple(item.get(k, ())) for k in ("speakers", "tools", "produces")}
    return Step(**{**item, **lists})


def steps_json(steps: Sequence[Step]) -> str:
    # A step without products is stored as before products existed, so the rows of such
    # versions stay readable by older code sharing the data folder.
    rows = [{k: v for k, v in asdict(s).items() if k != "produces" or v} for s in steps]
    return json.dumps(rows, ensure_ascii=False)


_DAMAGED = (
    "restore it from a backup, or move it aside with `staffroom doctor --repair` (its SOP "
    "versions, metrics and drafts are then lost; sop_library/ cards are imported again)"
)


class StoreBase:
    """The connection of :class:`~framework.sop.store.SopStore`: opening, transactions, rows."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        """Wrap an open connection; use :meth:`open` instead."""
        self._conn = conn
        self._conn.row_factory = sqlite3.Row
        # One connection serves every task of this process: transactions must not overlap on it.
        self._lock = asyncio.Lock()
        self.path = path

    @classmethod
    async def open(cls, path: str | Path) -> Self:
        """Open (creating if needed) the store at ``path``: a file, or a folder to hold
        ``sops.sqlite``. :class:`StorageError` if it cannot be opened."""
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
        return cls(conn, path)

    async def close(self) -> None:
        """Close the connection."""
        await self._conn.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        # IMMEDIATE takes the write lock up front: a deferred transaction that reads and
        # then writes can fail with SQLITE_BUSY at the upgrade, which the busy timeout
        # does not retry.
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    await self._conn.execute("COMMIT")
                except BaseException:
                    await self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StorageError(f"cannot write to SOP store {self.path}: {exc}") from exc

    async def _write_one(self, sql: str, args: Sequence[Any] | dict[str, Any]) -> None:
        async with self._write() as conn:
            await conn.execute(sql, args)

    async def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        async with self._conn.execute(sql, args) as cursor:
            return list(await cursor.fetchall())

    async def _optional_rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        # A file opened read-only is never migrated: a table added since it was made is
        # read as empty rather than failing a read-only command.
        try:
            return await self._rows(sql, *args)
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise

    @staticmethod
    async def _set_status(conn: aiosqlite.Connection, sop_id: str, v: int, s: Status) -> None:
        # The one UPDATE the store ever makes to a version row.
        sql = "UPDATE versions SET status = ? WHERE sop_id = ? AND version = ?"
        await conn.execute(sql, (s.value, sop_id, v))
