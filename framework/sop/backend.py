"""What :class:`~framework.sop.store.SopStore` needs of its database, whichever it is.

Two classes give it: :class:`~framework.sop.connection.SopConnection` (``sops.sqlite``, the
default) and :class:`~framework.sop.pg_connection.PgSopConnection` (PostgreSQL, for replicas
sharing one database). The store writes its SQL once, in the subset both dialects accept:
``?`` placeholders, ``INSERT ... ON CONFLICT``, quoted ``"user"`` and ``"references"``,
columns read by name; the one expression that differs is asked of :meth:`json_length`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

__all__ = ["Row", "SopBackend", "Transaction"]

Row = dict[str, Any]
"""A row read by column name (both backends give plain dicts)."""


class Transaction(Protocol):
    """The open write transaction :meth:`SopBackend.write` yields."""

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        ...


class SopBackend(Protocol):
    """A database holding the SOP store's tables."""

    @property
    def where(self) -> Path | str:
        """The store named for messages: the file, or the database's URL without password."""
        ...

    def write(self, key: str = "") -> AbstractAsyncContextManager[Transaction]:
        """One write transaction, serialised with every other writer of ``key`` (an SOP id;
        ``""``: no read-then-write to guard), in this process and in every other one sharing
        the store; committed when the block ends, rolled back if it raises. Reads made inside
        the block (:meth:`rows`) see its own writes."""
        ...

    async def write_one(self, sql: str, args: Sequence[Any]) -> None:
        """One statement, atomic on its own (no read before it to guard)."""
        ...

    async def rows(self, sql: str, *args: Any) -> list[Row]:
        """Every row ``sql`` selects."""
        ...

    async def optional_rows(self, sql: str, *args: Any) -> list[Row]:
        """:meth:`rows`, or none when the table is not there (a store never migrated)."""
        ...

    def json_length(self, column: str) -> str:
        """The SQL for the length of the JSON array held as text in ``column``."""
        ...

    async def close(self) -> None:
        """Let go of the database."""
        ...
