"""The ingest ledger: every message a surface accepted, by the id its sender gave, kept on disk.

Chat platforms deliver at least once (Feishu retries at 15 s, 5 min, 1 h and 6 h; Slack when
its 3-second acknowledgement is late) and HTTP clients retry with an ``Idempotency-Key``. The
ledger remembers each id per session for ``retention`` seconds (a week by default, longer
than any platform retries), across restarts and processes, with the result the first delivery
got, so a redelivery returns that result and changes nothing.

It is also the durable queue: a message is written here (with its text) before its turn runs,
so one a crash interrupted is found and run when the gateway opens again. And it keeps, for
the same ``retention``, which platform message carried which of a session's events (what an
adapter sent): a person's reply to that platform message is a reply to that event.

One class, :class:`IngestLedger`, one set of SQL, on either store: ``ingest.sqlite`` in the
data folder (:meth:`IngestLedger.open`, one process's, the default) or the tables every
replica on one PostgreSQL database shares (:meth:`IngestLedger.open_database`). What differs
between the two is the backend's (framework/serving/ledger_backend.py lists it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from framework.database.pool import Database
from framework.errors import StorageError

from .ledger_backend import COLUMNS, PENDING, LedgerBackend, Row
from .pg_ledger import PgLedgerTables
from .sqlite_ledger import SqliteLedgerFile

__all__ = ["RETENTION_SECONDS", "Admission", "Entry", "IngestLedger", "Ledger"]

RETENTION_SECONDS = 7 * 86400
"""How long an id is remembered: a week, past every platform's longest retry (a day)."""

CLAIM_TRIES = 5
"""Claims of one key retried when its entry is forgotten between our insert and our read."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One accepted message as the ledger holds it."""

    session: str
    key: str
    """``msg:<message id>`` or ``idem:<Idempotency-Key>``."""
    message_id: str
    author: str
    text: str
    state: str
    """``queued``, ``running``, ``done``, ``coalesced`` or ``rejected``."""
    merged_into: str | None
    result: dict[str, Any] | None
    seq: int
    reply_to: str | None = None
    """The id of the session's event the message replies to (run with it after a crash)."""
    opening: bool = False
    """The room's opening message (no double-texting policy applies to it)."""

    @classmethod
    def from_row(cls, row: Row) -> Entry:
        """The entry of a row of :data:`~framework.serving.ledger_backend.COLUMNS`."""
        result = row["result"]
        return cls(
            session=row["session"],
            key=row["key"],
            message_id=row["message_id"],
            author=row["author"],
            text=row["text"],
            state=row["state"],
            merged_into=row["merged_into"],
            result=None if result is None else json.loads(result),
            seq=int(row["seq"]),
            reply_to=row["reply_to"],
            opening=bool(row["opening"]),
        )


@dataclass(frozen=True, slots=True)
class Admission:
    """What :meth:`IngestLedger.admit` made of a message."""

    seq: int | None = None
    """Its place in the ledger's one order (the room's queue), when it is new."""
    known: Entry | None = None
    """A redelivery: the entry its key already has."""
    refused: bool = False
    """Not recorded: the room is answering another message (policy ``reject``)."""


class IngestLedger:
    """Accepted message ids per session, their state and first result, and the platform
    messages sent. Open with :meth:`open` (``ingest.sqlite``) or :meth:`open_database`;
    close with :meth:`close`.

    :meth:`claim` is the exactly-once point: of any number of concurrent claims of one
    ``(session, key)``, in one process or many, exactly one gets None.
    """

    def __init__(self, db: LedgerBackend, retention: float) -> None:
        """Use an open backend; use :meth:`open` or :meth:`open_database` instead."""
        self._db = db
        self.retention = retention

    @classmethod
    async def open(cls, path: Path, *, retention: float = RETENTION_SECONDS) -> IngestLedger:
        """Open (creating) ``ingest.sqlite`` at ``path``, this process's, and drop finished
        ids older than ``retention`` seconds."""
        return await cls._started(await SqliteLedgerFile.open(path), retention)

    @classmethod
    async def open_database(
        cls, db: Database, *, retention: float = RETENTION_SECONDS
    ) -> IngestLedger:
        """The ledger every replica on ``db`` shares, its tables created first (once,
        whichever replica comes first), finished ids older than ``retention`` seconds
        dropped. :meth:`close` leaves the pool open: it is the replica's."""
        return await cls._started(await PgLedgerTables.open(db), retention)

    @classmethod
    async def _started(cls, db: LedgerBackend, retention: float) -> IngestLedger:
        # Finished entries and sent records past retention go as the ledger opens (a
        # restart, a replica joining); unanswered messages stay, however old.
        try:
            await db.execute(
                f"DELETE FROM ingest WHERE created <= {db.ago} AND NOT ({PENDING})", (retention,)
            )
            await db.execute(f"DELETE FROM sent WHERE created <= {db.ago}", (retention,))
        except Exception as exc:  # sqlite3's or psycopg's: the store's own words
            await db.close()
            raise StorageError(
                f"cannot drop old entries from the ingest ledger {db.where}: {exc}; check that "
                "it can be written (free disk, permissions, the database reachable), then "
                "start again"
            ) from exc
        return cls(db, retention)

    @property
    def backend(self) -> LedgerBackend:
        """The store the ledger's SQL runs on (the room queue's statements use it too)."""
        return self._db

    async def close(self) -> None:
        """Release what the ledger holds open (the file; a pool stays its owner's)."""
        await self._db.close()

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

        Of concurrent claims of one key, in any process or replica, exactly one gets None.
        """
        admitted = await self.admit(
            session,
            key,
            message_id=message_id,
            author=author,
            text=text,
            state=state,
            reply_to=reply_to,
        )
        return admitted.known

    async def admit(
        self,
        session: str,
        key: str,
        *,
        message_id: str,
        author: str,
        text: str,
        state: str = "queued",
        reply_to: str | None = None,
        opening: bool = False,
        unless_answering: bool = False,
    ) -> Admission:
        """Record a new message (its ``seq``), or give the entry its key already has.

        ``unless_answering`` (policy ``reject``): record it only when no other message of
        the session waits or runs, whichever process or replica took that one (a room's
        opening message does not count); decided and written at once, one room at a time.
        Of concurrent claims of one key, in any process or replica, exactly one is new."""
        fields = {"key": key, "message_id": message_id, "author": author, "text": text}
        for field, value in {**fields, "reply_to": reply_to}.items():
            self._db.admit(field, value)
        columns, values, args = self._db.new_row()
        mine, owner = self._db.mine("")
        busy = (
            f" WHERE NOT EXISTS (SELECT 1 FROM ingest WHERE session = ? AND {PENDING} "
            f"AND opening = 0 AND message_id <> ?{mine})"
            if unless_answering
            else " WHERE true"  # SQLite reads ON CONFLICT after a bare SELECT as a join's
        )
        sql = (
            "INSERT INTO ingest (session, key, message_id, author, text, state, reply_to, "
            f"opening, {columns}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, {values}{busy} "
            "ON CONFLICT (session, key) DO NOTHING RETURNING seq"
        )
        row = (session, key, message_id, author, text, state, reply_to, int(opening), *args)
        if unless_answering:
            row += (session, message_id, *owner)
        for _ in range(CLAIM_TRIES):
            if unless_answering:
                async with self._db.serial(session) as serial:
                    inserted = await serial.rows(sql, row)
            else:
                inserted = await self._db.rows(sql, row)
            if inserted:
                return Admission(seq=int(inserted[0]["seq"]))
            known = await self.get(session, key)
            if known is not None:
                return Admission(known=known)
            if unless_answering:
                return Admission(refused=True)
            # The holder forgot it (its run failed) between our insert and our read: the
            # key is free again, so claim it anew rather than report a claim we never made.
        raise StorageError(
            f"the ingest ledger key {key!r} of {session} keeps appearing and vanishing; "
            "another process forgets it as fast as it is claimed (check the replicas' logs)"
        )

    async def get(self, session: str, key: str) -> Entry | None:
        """The entry for ``key`` in ``session``, if the ledger has it."""
        rows = await self._select("WHERE session = ? AND key = ?", (session, key))
        return rows[0] if rows else None

    async def by_message(self, session: str, message_id: str) -> list[Entry]:
        """Every entry (message id and idempotency key alike) naming ``message_id``."""
        return await self._select(
            "WHERE session = ? AND message_id = ? ORDER BY seq", (session, message_id)
        )

    async def merged_into(self, session: str, message_id: str) -> list[Entry]:
        """The messages coalesced into ``message_id``, in arrival order."""
        return await self._select(
            "WHERE session = ? AND merged_into = ? ORDER BY seq", (session, message_id)
        )

    async def pending(self) -> list[Entry]:
        """Accepted messages never answered (a crash or a stop came first), oldest first, of
        every process sharing the ledger."""
        return await self._select(f"WHERE {PENDING} ORDER BY seq", ())

    async def take_orphans(self) -> list[Entry]:
        """Unanswered messages no running process will answer, now this process's, with its
        own, oldest first: on a file every pending one (the gateway asks once, as it opens);
        on a database those of replicas that are gone, taken in one atomic statement, so of
        two replicas sweeping at once each message goes to one of them."""
        taken = {(e.session, e.key): e for e in map(Entry.from_row, await self._db.take_orphans())}
        return sorted(taken.values(), key=lambda e: e.seq)

    async def requeue(self, session: str, message_id: str) -> None:
        """Give a message whose run was cut off (or lost the room's lease to another replica)
        back to the queue: the next sweep or gateway, here or on another replica, runs it."""
        await self._db.execute(
            f"UPDATE ingest SET state = 'queued'{self._db.disown} "
            f"WHERE session = ? AND message_id = ? AND {PENDING}",
            (session, message_id),
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
        stored = None if result is None else json.dumps(result, ensure_ascii=False)
        await self._db.execute(
            "UPDATE ingest SET state = ?, result = COALESCE(?, result), "
            "merged_into = COALESCE(?, merged_into) WHERE session = ? AND message_id = ?",
            (state, stored, merged_into, session, message_id),
        )

    async def drop(self, session: str, key: str) -> None:
        """Drop the one entry ``key`` names (a name of a message whose other name turned out
        known or refused: left, it would wait in its room's queue with no lane to run it)."""
        await self._db.execute("DELETE FROM ingest WHERE session = ? AND key = ?", (session, key))

    async def forget(self, session: str, message_id: str) -> None:
        """Drop a message whose run failed, so its sender's retry runs it again."""
        await self._db.execute(
            "DELETE FROM ingest WHERE session = ? AND message_id = ?", (session, message_id)
        )

    async def record_sent(self, session: str, platform_id: str, event_id: str) -> None:
        """Remember that the platform message ``platform_id`` carried ``event_id`` (a platform
        that reuses an id: the latest wins)."""
        await self._db.execute(
            "INSERT INTO sent (session, platform_id, event_id, created) "
            f"VALUES (?, ?, ?, {self._db.now}) ON CONFLICT (session, platform_id) "
            "DO UPDATE SET event_id = excluded.event_id, created = excluded.created",
            (session, platform_id, event_id),
        )

    async def sent_event(self, session: str, platform_id: str) -> str | None:
        """The id of the event of ``session`` the platform message ``platform_id`` carried."""
        rows = await self._db.rows(
            "SELECT event_id FROM sent WHERE session = ? AND platform_id = ?",
            (session, platform_id),
        )
        return str(rows[0]["event_id"]) if rows else None

    async def _select(self, where: str, args: tuple[Any, ...]) -> list[Entry]:
        rows = await self._db.rows(f"SELECT {COLUMNS} FROM ingest {where}", args)
        return [Entry.from_row(row) for row in rows]


Ledger = IngestLedger
"""What a gateway holds (the name its callers type with), whichever store is behind it."""
