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
- which text it cannot store (:meth:`~LedgerBackend.admit`: NUL, on PostgreSQL).

Statements run one at a time, each committed on its own: none of the ledger's writes reads
first, so none needs a transaction (``claim``'s exactly-once is the primary key's).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = ["COLUMNS", "PENDING", "LedgerBackend", "Row"]

Row = dict[str, Any]
"""A row read by column name (both backends give plain dicts)."""

COLUMNS = "session, key, message_id, author, text, state, merged_into, result, seq, reply_to"
"""The columns of ``ingest`` an :class:`~framework.serving.ledger.Entry` is made of."""

PENDING = "state IN ('queued', 'running')"
"""The condition of a message accepted but not yet answered (run again after a crash)."""


class LedgerBackend(Protocol):
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

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement (committed); how many rows it changed."""
        ...

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row ``sql`` selects."""
        ...

    async def close(self) -> None:
        """Let go of the database."""
        ...
