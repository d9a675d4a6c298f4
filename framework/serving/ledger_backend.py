"""What :class:`~framework.serving.ledger.IngestLedger` needs of its database, whichever it is.

Two classes give it: :class:`~framework.serving.sqlite_ledger.SqliteLedgerFile`
(``ingest.sqlite``, one process's, the default) and
:class:`~framework.serving.pg_ledger.PgLedgerTables` (the tables every replica on one
PostgreSQL database shares). The ledger writes its SQL once, as SQLite reads it: ``?``
placeholders, tables ``ingest`` and ``sent``, ``INSERT ... ON CONFLICT``, columns read by name.
What differs between the two is asked of the backend, and is all there is:

- the clock (:attr:`~LedgerBackend.now`, :meth:`~LedgerBackend.ago`): the host's on SQLite,
  the database's on PostgreSQL, so ages agree across replicas;
- what a new row gets beside the message (:meth:`~LedgerBackend.new_row`): on SQLite the
  next ``seq`` and the time, on PostgreSQL (``seq`` an identity column, ``created`` a default)
  the replica that queued it;
- what giving a message back to the queue also clears (:attr:`~LedgerBackend.disown`);
- which unanswered messages this process takes (:meth:`~LedgerBackend.take_orphans`);
- which text it cannot store (:meth:`~LedgerBackend.admit`: NUL, on PostgreSQL);
- how the statements that decide a room's double-texting policy run one room at a time
  (:meth:`~LedgerBackend.serial`).

Statements run one at a time, each committed on its own: a claim's exactly-once is the primary
key's. Only the policy decisions read then write (is the room answering? which message does
this one join?): those run in :meth:`~LedgerBackend.serial`, one at a time per room.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

__all__ = ["COLUMNS", "PENDING", "LedgerBackend", "Row", "Statements"]

Row = dict[str, Any]
"""A row read by column name (both backends give plain dicts)."""

COLUMNS = (
    "session, key, message_id, author, text, state, merged_into, result, seq, reply_to, opening"
)
"""The columns of ``ingest`` an :class:`~framework.serving.ledger.Entry` is made of."""

PENDING = "state IN ('queued', 'running')"
"""The condition of a message accepted but not yet answered (run again after a crash)."""


class Statements(Protocol):
    """Where statements run: the backend itself, or one room's serial block."""

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement; how many rows it changed."""
        ...

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row ``sql`` selects (or a statement ``RETURNING`` gives)."""
        ...


class LedgerBackend(Statements, Protocol):
    """A database holding the ingest ledger's tables, ``ingest`` and ``sent``."""

    @property
    def where(self) -> Path | str:
        """The ledger named for messages: the file, or the database's URL without password."""
        ...

    @property
    def now(self) -> str:
        """The SQL of the time now, as ``created`` holds it."""
        ...

    @property
    def ago(self) -> str:
        """The SQL of the time a number of seconds (its one placeholder) ago."""
        ...

    @property
    def disown(self) -> str:
        """What ``UPDATE ingest SET`` adds to give a message back to every process's queue
        (``""``, or ``, column = value``)."""
        ...

    def new_row(self) -> tuple[str, str, tuple[Any, ...]]:
        """The columns a new ``ingest`` row gets beside the message's own (``"a, b"``), the SQL
        of their values, and the parameters those take."""
        ...

    def admit(self, field: str, value: str | None) -> None:
        """Refuse (:class:`~framework.errors.InputError`, naming ``field``) a value this
        database cannot store."""
        ...

    async def take_orphans(self) -> list[Row]:
        """The rows (:data:`COLUMNS`) of unanswered messages no running process will answer,
        and this process's own, now this process's; any order."""
        ...

    def mine(self, alias: str) -> tuple[str, tuple[Any, ...]]:
        """The condition (``" AND <alias>owner = ?"`` or ``""``) and its parameters that keep
        a room's order and policy to the rows this process decides on: every row on
        PostgreSQL, where a sweep adopts the rows of replicas that are gone; this process's
        own on the file, which has no such sweep (a process that died would hold the room
        of every other one until a gateway opens again)."""
        ...

    def serial(self, session: str) -> AbstractAsyncContextManager[Statements]:
        """Run the block's statements as one, with no other block of ``session`` (in any
        process sharing the store) in between: a transaction holding the room's advisory
        lock on PostgreSQL, this process's lock on the file."""
        ...

    async def close(self) -> None:
        """Let go of the database."""
        ...
