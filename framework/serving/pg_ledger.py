"""The ingest ledger on PostgreSQL: the tables every replica on one database shares.

Several ``staffroom serve`` replicas behind one load balancer each get some of a platform's
redeliveries, so "have we seen this id" must have one answer for all of them. The answer is
the primary key ``(session, key)`` of ``staffroom_ingest`` and ``INSERT ... ON CONFLICT DO
NOTHING``: the database lets exactly one insert of a key through, whichever replica sent it.
Never a read then an insert: two replicas both read "absent" and both insert, which is how
Letta's replicas ran a message twice (letta #2079, #3153).

:class:`PgLedgerTables` is the :class:`~framework.serving.ledger_backend.LedgerBackend` the
:class:`~framework.serving.ledger.IngestLedger` runs its SQL on with a database. The SQL is
written once, as for ``ingest.sqlite``; :func:`to_postgres` turns it into PostgreSQL's. What
sharing changes: ``seq`` is an identity column, so "oldest first" is one order across
replicas; ages are the database's clock (``now()``), not each host's; each message records
the replica that queued it (``owner``), so a sweep takes over the messages of replicas that
are gone, and only those.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from framework.database.advisory_keys import name_key
from framework.database.leases import LEASE_MIGRATIONS
from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database
from framework.database.url import redact
from framework.errors import InputError

from .ledger_backend import COLUMNS, PENDING, Row, Statements

if TYPE_CHECKING:  # the `postgres` extra, present whenever a Database is open
    from psycopg import AsyncConnection

__all__ = ["LOCK_CLASS", "MIGRATIONS", "REPLICA_PREFIX", "PgLedgerTables", "to_postgres"]

MIGRATIONS = [
    Migration(
        "ingest",
        1,
        """
        CREATE TABLE staffroom_ingest (
            session TEXT NOT NULL,
            key TEXT NOT NULL,
            message_id TEXT NOT NULL,
            author TEXT NOT NULL,
            text TEXT NOT NULL,
            state TEXT NOT NULL,
            merged_into TEXT,
            result TEXT,
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            created TIMESTAMPTZ NOT NULL DEFAULT now(),
            reply_to TEXT,
            PRIMARY KEY (session, key)
        );
        CREATE INDEX staffroom_ingest_message ON staffroom_ingest (session, message_id);
        CREATE INDEX staffroom_ingest_pending ON staffroom_ingest (seq)
            WHERE state IN ('queued', 'running');
        CREATE INDEX staffroom_ingest_created ON staffroom_ingest (created);
        CREATE TABLE staffroom_sent (
            session TEXT NOT NULL,
            platform_id TEXT NOT NULL,
            event_id TEXT NOT NULL,
            created TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (session, platform_id)
        );
        CREATE INDEX staffroom_sent_created ON staffroom_sent (created);
        """,
    ),
    # Which replica queued a message: a sweep takes over the messages of replicas that are
    # gone (their replica lease expired), and only those (see Gateway).
    Migration("ingest", 2, "ALTER TABLE staffroom_ingest ADD COLUMN owner TEXT"),
    # A room's opening message: no double-texting policy applies to it (see IngestLedger).
    Migration(
        "ingest", 3, "ALTER TABLE staffroom_ingest ADD COLUMN opening SMALLINT NOT NULL DEFAULT 0"
    ),
]
"""The ledger's tables (feature ``ingest``), applied by :func:`apply_migrations`."""

LOCK_CLASS = 0x494E47  # "ING"
"""The first key of the two-key advisory lock of a room's policy decisions (the second: the
session key's :func:`~framework.database.advisory_keys.name_key`)."""

REPLICA_PREFIX = "replica:"
"""A replica holds the lease ``replica:<owner>`` while it runs (see :meth:`take_orphans`)."""

_TABLES = re.compile(r"\b(ingest|sent)\b")

# One atomic UPDATE: of two replicas sweeping at once, each message goes to one of them.
_TAKE_ORPHANS = f"""
UPDATE ingest AS i SET owner = ?, state = 'queued'
WHERE {PENDING} AND owner IS DISTINCT FROM ?
  AND NOT EXISTS (
    SELECT 1 FROM staffroom_leases AS l
    WHERE l.session = '{REPLICA_PREFIX}' || i.owner AND l.expires_at > now()
  )
RETURNING {COLUMNS}
"""


@lru_cache(maxsize=64)
def to_postgres(sql: str) -> str:
    """The ledger's SQL (``?`` placeholders, tables ``ingest`` and ``sent``) as PostgreSQL
    runs it: ``%s`` placeholders (a literal ``%`` escaped), tables ``staffroom_ingest`` and
    ``staffroom_sent``. The ledger passes every value as a parameter: no literal in its SQL
    holds a ``?`` or a table's name for this to rewrite by mistake."""
    sql = sql.replace("%", "%%").replace("?", "%s")
    return _TABLES.sub(r"staffroom_\1", sql)


class PgLedgerTables:
    """``staffroom_ingest`` and ``staffroom_sent`` through a replica's pool (autocommit)."""

    # The statement's time, not the transaction's: in a serial block the lock may be waited
    # for, and the coalesce window must not count that wait.
    now = "statement_timestamp()"
    ago = "(statement_timestamp() - make_interval(secs => ?))"
    disown = ", owner = NULL"  # the next sweep, on any replica, takes it

    def __init__(self, db: Database) -> None:
        """Use ``db`` (already migrated: see :meth:`open`); the pool stays its owner's."""
        self.db = db

    @classmethod
    async def open(cls, db: Database) -> PgLedgerTables:
        """Create the tables if missing (once, under the migration lock, whichever replica
        comes first) and use ``db``. :class:`StorageError` if the database refuses."""
        await apply_migrations(db, [*LEASE_MIGRATIONS, *MIGRATIONS], what="the ingest ledger")
        return cls(db)

    @property
    def where(self) -> str:
        """The database, for messages (its URL without the password)."""
        return f"{redact(self.db.url)} (tables staffroom_ingest, staffroom_sent)"

    def new_row(self) -> tuple[str, str, tuple[Any, ...]]:
        """The replica that queued the message (``seq`` and ``created`` are the table's)."""
        return "owner", "?", (self.db.owner,)

    def admit(self, field: str, value: str | None) -> None:
        """PostgreSQL text cannot hold NUL: say so instead of failing as a database error."""
        if value is not None and "\x00" in value:
            raise InputError(
                f"the {field} contains a NUL character, which the shared database cannot store",
                field=field,
                fix="remove the NUL (\\u0000) characters and send it again",
            )

    async def take_orphans(self) -> list[Row]:
        """The unanswered messages of replicas that are gone (their ``replica:`` lease has
        expired) or of none, now this replica's, with this replica's own."""
        me = self.db.owner
        taken = await self.rows(_TAKE_ORPHANS, (me, me))
        # This replica's own unanswered messages too: the gateway skips those its lanes hold
        # and runs again one a database outage cut off (its settling could not be written).
        mine = await self.rows(f"SELECT {COLUMNS} FROM ingest WHERE owner = ? AND {PENDING}", (me,))
        return [*taken, *mine]

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        """Run one statement (autocommit); how many rows it changed."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(to_postgres(sql), tuple(args))
            return cursor.rowcount

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        """Every row ``sql`` selects (or a statement ``RETURNING`` gives)."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(to_postgres(sql), tuple(args))
            return [dict(row) for row in await cursor.fetchall()]

    def mine(self, alias: str) -> tuple[str, tuple[Any, ...]]:
        """Every replica's rows: one queue per room across the database."""
        return "", ()

    @asynccontextmanager
    async def serial(self, session: str) -> AsyncIterator[Statements]:
        """One transaction holding the room's advisory lock: every replica's blocks of one
        room run one after another, and each statement sees what the one before committed."""
        key = name_key(session)
        async with self.db.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_CLASS, key))
            yield _InTransaction(conn)

    async def close(self) -> None:
        """Nothing to release: the pool is the replica's (``Database.close``)."""


class _InTransaction:
    """The statements of one :meth:`PgLedgerTables.serial` block, on its connection."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self._conn = conn

    async def execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        cursor = await self._conn.execute(to_postgres(sql), tuple(args))
        return cursor.rowcount

    async def rows(self, sql: str, args: Sequence[Any] = ()) -> list[Row]:
        cursor = await self._conn.execute(to_postgres(sql), tuple(args))
        return [dict(row) for row in await cursor.fetchall()]
