"""The ingest ledger on PostgreSQL: one ledger every replica on a database shares.

Several ``staffroom serve`` replicas behind one load balancer each get some of a platform's
redeliveries, so "have we seen this id" must have one answer for all of them. The answer is
the primary key ``(session, key)`` of ``staffroom_ingest`` and ``INSERT ... ON CONFLICT DO
NOTHING``: the database lets exactly one insert of a key through, whichever replica sent it.
Never a read then an insert: two replicas both read "absent" and both insert, which is how
Letta's replicas ran a message twice (letta #2079, #3153).

Same interface and semantics as :class:`~framework.serving.ledger.IngestLedger` (the SQLite
file of one process), with two differences that come from sharing: ``seq`` is an identity
column, so "oldest first" is one order across replicas, and ages are the database's clock
(``now()``), not each host's. Retention cleanup runs when a replica opens the ledger.
"""

from __future__ import annotations

import json
from typing import Any

from framework.database.leases import LEASE_MIGRATIONS
from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database
from framework.database.url import redact
from framework.errors import InputError, StorageError
from framework.serving.ledger import RETENTION_SECONDS, Entry

__all__ = ["MIGRATIONS", "PgIngestLedger"]

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
]
"""The ledger's tables (feature ``ingest``), applied by :func:`apply_migrations`."""

REPLICA_PREFIX = "replica:"
"""A replica holds the lease ``replica:<owner>`` while it runs (see :meth:`take_orphans`)."""

_TAKE_ORPHANS = f"""
UPDATE staffroom_ingest AS i SET owner = %(me)s
WHERE state IN ('queued', 'running') AND owner IS DISTINCT FROM %(me)s
  AND NOT EXISTS (
    SELECT 1 FROM staffroom_leases AS l
    WHERE l.session = '{REPLICA_PREFIX}' || i.owner AND l.expires_at > now()
  )
RETURNING {{columns}}
"""

_COLUMNS = "session, key, message_id, author, text, state, merged_into, result, seq, reply_to"

CLAIM_TRIES = 5
"""Claims of one key retried when its entry is forgotten between our insert and our read."""


def _no_nul(field: str, value: str | None) -> None:
    # PostgreSQL text cannot hold NUL; say so instead of failing as a database error.
    if value is not None and "\x00" in value:
        raise InputError(
            f"the {field} contains a NUL character, which the shared database cannot store",
            field=field,
            fix="remove the NUL (\\u0000) characters and send it again",
        )


class PgIngestLedger:
    """``staffroom_ingest`` and ``staffroom_sent``: the ingest ledger every replica shares."""

    def __init__(self, db: Database, retention: float) -> None:
        self.db = db
        self.retention = retention

    @classmethod
    async def open(cls, db: Database, *, retention: float = RETENTION_SECONDS) -> PgIngestLedger:
        """Create the tables if missing (under the migration lock) and drop finished entries
        and sent records older than ``retention`` seconds."""
        try:
            await apply_migrations(db, [*LEASE_MIGRATIONS, *MIGRATIONS], what="the ingest ledger")
            async with db.connection() as conn:
                await conn.execute(
                    "DELETE FROM staffroom_ingest WHERE created < now() - make_interval("
                    "secs => %s) AND state NOT IN ('queued', 'running')",
                    (retention,),
                )
                await conn.execute(
                    "DELETE FROM staffroom_sent WHERE created < now() - make_interval(secs => %s)",
                    (retention,),
                )
        except StorageError:
            raise
        except Exception as exc:  # psycopg's errors: the extra is imported with the pool
            raise StorageError(
                f"cannot use the ingest ledger on {redact(db.url)}: {exc}; check that the "
                "database user may create tables there"
            ) from exc
        return cls(db, retention)

    async def close(self) -> None:
        """Nothing to release: the pool is the replica's (``Database.close``)."""

    async def claim(
        self,
        session: str,
        key: str,
        *,
        message_id: str,
        author: str,
        text: str,
        state: str = "queued",
        reply_to: str | None = None,
    ) -> Entry | None:
        """Record a new message; None when it is new, else the entry the key already has.

        Of concurrent claims of one key, on any replica, exactly one gets None.
        """
        for field, value in (
            ("key", key),
            ("message_id", message_id),
            ("author", author),
            ("text", text),
            ("reply_to", reply_to),
        ):
            _no_nul(field, value)
        for _ in range(CLAIM_TRIES):
            async with self.db.connection() as conn:
                cursor = await conn.execute(
                    "INSERT INTO staffroom_ingest (session, key, message_id, author, text, "
                    "state, reply_to, owner) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                    "ON CONFLICT (session, key) DO NOTHING RETURNING seq",
                    (session, key, message_id, author, text, state, reply_to, self.db.owner),
                )
                if await cursor.fetchone() is not None:
                    return None
            known = await self.get(session, key)
            if known is not None:
                return known
            # The holder forgot it (its run failed) between our insert and our read: the
            # key is free again, so claim it anew rather than report a claim we never made.
        raise StorageError(
            f"the ingest ledger key {key!r} of {session} keeps appearing and vanishing; "
            "another replica forgets it as fast as it is claimed (check the replicas' logs)"
        )

    async def get(self, session: str, key: str) -> Entry | None:
        """The entry for ``key`` in ``session``, if the ledger has it."""
        rows = await self._select("WHERE session = %s AND key = %s", (session, key))
        return rows[0] if rows else None

    async def by_message(self, session: str, message_id: str) -> list[Entry]:
        """Every entry (message id and idempotency key alike) naming ``message_id``."""
        return await self._select(
            "WHERE session = %s AND message_id = %s ORDER BY seq", (session, message_id)
        )

    async def merged_into(self, session: str, message_id: str) -> list[Entry]:
        """The messages coalesced into ``message_id``, in arrival order."""
        return await self._select(
            "WHERE session = %s AND merged_into = %s ORDER BY seq", (session, message_id)
        )

    async def pending(self) -> list[Entry]:
        """Accepted messages never answered (a crash or a stop came first), oldest first,
        of every replica."""
        return await self._select("WHERE state IN ('queued', 'running') ORDER BY seq", ())

    async def take_orphans(self) -> list[Entry]:
        """The unanswered messages of replicas that are gone (their ``replica:`` lease has
        expired) or of none, now this replica's, with this replica's own, oldest first. One
        atomic UPDATE: of two replicas sweeping at once, each message goes to one of them."""
        async with self.db.connection() as conn:
            rows = await (
                await conn.execute(_TAKE_ORPHANS.format(columns=_COLUMNS), {"me": self.db.owner})
            ).fetchall()
        # This replica's own unanswered messages too: the gateway skips those its lanes hold
        # and runs again one a database outage cut off (its settling could not be written).
        mine = await self._select(
            "WHERE owner = %s AND state IN ('queued', 'running')", (self.db.owner,)
        )
        taken = {(e.session, e.key): e for e in [*map(self._entry, rows), *mine]}
        return sorted(taken.values(), key=lambda e: e.seq)

    async def requeue(self, session: str, message_id: str) -> None:
        """Give a message back to the queue for any replica (its run lost the room's lease
        to another replica: the next sweep, there or here, runs it)."""
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE staffroom_ingest SET state = 'queued', owner = NULL "
                "WHERE session = %s AND message_id = %s AND state IN ('queued', 'running')",
                (session, message_id),
            )

    async def pending_for(self, session: str) -> list[Entry]:
        """:meth:`pending` of one session (what the holder of its room's lease runs)."""
        return await self._select(
            "WHERE session = %s AND state IN ('queued', 'running') ORDER BY seq", (session,)
        )

    async def update(
        self,
        session: str,
        message_id: str,
        *,
        state: str,
        result: dict[str, Any] | None = None,
        merged_into: str | None = None,
    ) -> None:
        """Set the state (and result, target) of every entry of a message."""
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE staffroom_ingest SET state = %s, result = COALESCE(%s, result), "
                "merged_into = COALESCE(%s, merged_into) WHERE session = %s AND message_id = %s",
                (
                    state,
                    None if result is None else json.dumps(result, ensure_ascii=False),
                    merged_into,
                    session,
                    message_id,
                ),
            )

    async def set_text(self, session: str, message_id: str, text: str) -> None:
        """Replace the text of a waiting message (coalesced parts join it)."""
        _no_nul("text", text)
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE staffroom_ingest SET text = %s WHERE session = %s AND message_id = %s",
                (text, session, message_id),
            )

    async def forget(self, session: str, message_id: str) -> None:
        """Drop a message whose run failed, so its sender's retry runs it again."""
        async with self.db.connection() as conn:
            await conn.execute(
                "DELETE FROM staffroom_ingest WHERE session = %s AND message_id = %s",
                (session, message_id),
            )

    async def record_sent(self, session: str, platform_id: str, event_id: str) -> None:
        """Remember that the platform message ``platform_id`` carried ``event_id``."""
        async with self.db.connection() as conn:
            await conn.execute(
                "INSERT INTO staffroom_sent (session, platform_id, event_id) "
                "VALUES (%s, %s, %s) ON CONFLICT (session, platform_id) "
                "DO UPDATE SET event_id = EXCLUDED.event_id, created = now()",
                (session, platform_id, event_id),
            )

    async def sent_event(self, session: str, platform_id: str) -> str | None:
        """The id of the event of ``session`` the platform message ``platform_id`` carried."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "SELECT event_id FROM staffroom_sent WHERE session = %s AND platform_id = %s",
                (session, platform_id),
            )
            row = await cursor.fetchone()
        return None if row is None else str(row["event_id"])

    async def _select(self, where: str, args: tuple[Any, ...]) -> list[Entry]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(f"SELECT {_COLUMNS} FROM staffroom_ingest {where}", args)
            rows = await cursor.fetchall()
        return [self._entry(row) for row in rows]

    @staticmethod
    def _entry(row: dict[str, Any]) -> Entry:
        return Entry(
            session=row["session"],
            key=row["key"],
            message_id=row["message_id"],
            author=row["author"],
            text=row["text"],
            state=row["state"],
            merged_into=row["merged_into"],
            result=None if row["result"] is None else json.loads(row["result"]),
            seq=int(row["seq"]),
            reply_to=row["reply_to"],
        )
