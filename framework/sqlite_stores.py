"""Connections to the data folder's SQLite stores that say so when a file is damaged.

SQLite reports a damaged file as "malformed" or "not a database" from whichever query first
reads the bad page; :class:`StoreConnection` turns that, whoever asked, into one
:class:`~framework.errors.StorageError` naming the file, what it holds and the ways out.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from framework.data_folder import CHECKPOINTS, HOLDS, SOPS
from framework.errors import StorageError

__all__ = ["StoreConnection", "connect_store", "damaged_store"]

_REPAIR = {
    CHECKPOINTS: "move it aside and rebuild every room from its log",
    SOPS: "move it aside and start it empty (sop_library/ cards are imported again)",
}
_DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
T = TypeVar("T")


def damaged_store(path: Path, exc: BaseException) -> StorageError | None:
    """``exc`` as the error of a damaged store at ``path`` (SQLite found it "malformed" or
    "not a database"): the file, what it holds and the ways out. None for any other error."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int) or code & 0xFF not in _DAMAGE_CODES:
        return None
    held = f"; it holds {HOLDS[path.name]}" if path.name in HOLDS else ""
    fix = f"Restore it from a backup, or {_REPAIR.get(path.name, 'move it aside')}"
    return StorageError(f"{path} is damaged ({exc}){held}. {fix}: staffroom doctor --repair")


class StoreConnection(aiosqlite.Connection):
    """A connection to one store (:func:`connect_store`): a query that finds the file damaged
    raises :func:`damaged_store`'s error, whoever sent it. Every statement, fetch and commit
    (LangGraph's too) goes through aiosqlite's private ``_execute``, the one place that sees
    them all (the damaged-store tests in ``tests/e2e/test_doctor_cli.py`` fail if it moves)."""

    def __init__(self, path: Path, connector: Callable[[], sqlite3.Connection]) -> None:
        """A connection to ``path`` (maybe through a URI) made by ``connector``."""
        super().__init__(connector, iter_chunk_size=64)
        self.path = path

    async def _execute(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            result: T = await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]
        except sqlite3.DatabaseError as exc:
            error = damaged_store(self.path, exc)
            if error is None:
                raise
            raise error from exc
        return result


def connect_store(path: Path, uri: str | None = None, **kwargs: Any) -> StoreConnection:
    """``aiosqlite.connect`` for the store file ``path`` (through ``uri``, a ``file:`` URI of
    it, when given); ``kwargs`` go to ``sqlite3.connect``. Await it as aiosqlite's."""
    target, more = (str(path), kwargs) if uri is None else (uri, {**kwargs, "uri": True})
    return StoreConnection(path, lambda: sqlite3.connect(target, **more))
