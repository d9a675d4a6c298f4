"""The ingest ledger: every message a surface accepted, by the id its sender gave, kept on disk.

Chat platforms deliver at least once (Feishu retries at 15 s, 5 min, 1 h and 6 h; Slack when
its 3-second acknowledgement is late) and HTTP clients retry with an ``Idempotency-Key``. The
ledger remembers each id per session in ``ingest.sqlite`` for ``retention`` seconds (a week
by default, longer than any platform retries), across restarts and processes, with the result
the first delivery got, so a redelivery returns that result and changes nothing.

It is also the durable queue: a message is written here (with its text) before its turn runs,
so one a crash interrupted is found and run when the gateway opens again. And it keeps, for
the same ``retention``, which platform message carried which of a session's events (what an
adapter sent): a person's reply to that platform message is a reply to that event.

:class:`Ledger` is what a gateway needs of one; :class:`IngestLedger` is the SQLite file of
one process (the default), ``PgIngestLedger`` (``pg_ledger.py``) the table every replica on
one PostgreSQL database shares.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiosqlite

from framework.errors import StorageError

RETENTION_SECONDS = 7 * 86400
"""How long an id is remembered: a week, past every platform's longest retry (a day)."""

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

PENDING = ("queued", "running")
"""States of a message accepted but not yet answered (run again after a crash)."""


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


class Ledger(Protocol):
    """What the gateway needs of an ingest ledger, whichever store holds it.

    ``claim`` is the exactly-once point: of any number of concurrent claims of one
    ``(session, key)``, in one process or many, exactly one gets None.
    """

    async def close(self) -> None:
        """Release what the ledger holds open."""
        ...

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
        """Record a new message; None when it is new, else the entry the key already has."""
        ...

    async def get(self, session: str, key: str) -> Entry | None:
        """The entry for ``key`` in ``session``, if the ledger has it."""
        ...

    async def by_message(self, session: str, message_id: str) -> list[Entry]:
        """Every entry (message id and idempotency key alike) naming ``message_id``."""
        ...

    async def merged_into(self, session: str, message_id: str) -> list[Entry]:
        """The messages coalesced into ``message_id``, in arrival order."""
        ...

    async def pending(self) -> list[Entry]:
        """Accepted messages never answered, oldest first."""
        ...

    async def take_orphans(self) -> list[Entry]:
        """Unanswered messages no running process will answer, now this process's."""
        ...

    async def requeue(self, session: str, message_id: str) -> None:
        """Give a message whose run was cut off back to the queue."""
        ...

    async def pending_for(self, session: str) -> list[Entry]:
        """:meth:`pending` of one session, oldest first."""
        ...

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
        ...

    async def set_text(self, session: str, message_id: str, text: str) -> None:
        """Replace the text of a waiting message."""
        ...

    async def forget(self, session: str, message_id: str) -> None:
        """Drop a message whose run failed, so its sender's retry runs it again."""
        ...

    async def record_sent(self, session: str, platform_id: str, event_id: str) -> None:
        """Remember that the platform message ``platform_id`` carried ``event_id``."""
        ...

    async def sent_event(self, session: str, platform_id: str) -> str | None:
        """The id of the event of ``session`` the platform message ``platform_id`` carried."""
        ...


class IngestLedger:
    """``ingest.sqlite``: accepted message ids per session, their state and first result."""

    def __init__(self, conn: aiosqlite.Connection, path: Path, retention: float) -> None:
        self._conn = conn
        self.path = path
        self.retention = retention

    @classmethod
    async def open(cls, path: Path, *, retention: float = RETENTION_SECONDS) -> IngestLedger:
        """Open (creating) the ledger and drop ids older than ``retention`` seconds."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(path, timeout=30)
        except (OSError, aiosqlite.Error) as exc:
            raise StorageError(f"cannot open the ingest ledger {path}: {exc}") from exc
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.executescript(_SCHEMA)
            columns = [row[1] for row in await conn.execute_fetchall("PRAGMA table_info(ingest)")]
            if "reply_to" not in columns:  # a ledger from before replies were kept
                await conn.execute("ALTER TABLE ingest ADD COLUMN reply_to TEXT")
            cutoff = time.time() - retention
            done = "state NOT IN ('queued', 'running')"
            await conn.execute(f"DELETE FROM ingest WHERE created < ? AND {done}", (cutoff,))
            await conn.execute("DELETE FROM sent WHERE created < ?", (cutoff,))
            await conn.commit()
        except aiosqlite.Error as exc:
            await conn.close()
            raise StorageError(
                f"cannot use the ingest ledger {path}: {exc}; move it aside (redeliveries of "
                "older messages are then recognised by the session logs' ids alone)"
            ) from exc
        return cls(conn, path, retention)

    async def close(self) -> None:
        """Close the database."""
        await self._conn.close()

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
        """Record a new message; None when it is new, else the entry the key already has."""
        cursor = await self._conn.execute(
            "INSERT INTO ingest (session, key, message_id, author, text, state, seq, created, "
            "reply_to) "
            "VALUES (?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM ingest), ?, ?) "
            "ON CONFLICT (session, key) DO NOTHING",
            (session, key, message_id, author, text, state, time.time(), reply_to),
        )
        await self._conn.commit()
        if cursor.rowcount == 1:
            return None
        return await self.get(session, key)

    async def get(self, session: str, key: str) -> Entry | None:
        """The entry for ``key`` in ``session``, if the ledger has it."""
        rows = await self._select("WHERE session = ? AND key = ?", (session, key))
        return rows[0] if rows else None

    async def by_message(self, session: str, message_id: str) -> list[Entry]:
        """Every entry (message id and idempotency key alike) naming ``message_id``."""
        return await self._select("WHERE session = ? AND message_id = ?", (session, message_id))

    async def merged_into(self, session: str, message_id: str) -> list[Entry]:
        """The messages coalesced into ``message_id``, in arrival order."""
        return await self._select(
            "WHERE session = ? AND merged_into = ? ORDER BY seq", (session, message_id)
        )

    async def pending(self) -> list[Entry]:
        """Accepted messages never answered (a crash or a stop came first), oldest first."""
        return await self._select("WHERE state IN ('queued', 'running') ORDER BY seq", ())

    async def take_orphans(self) -> list[Entry]:
        """Messages no running process will answer: on this file, every pending one (the
        gateway asks once, as it opens; see the shared ledger for replicas)."""
        return await self.pending()

    async def requeue(self, session: str, message_id: str) -> None:
        """Mark a message queued again (its run was cut off; the next gateway runs it)."""
        await self._conn.execute(
            "UPDATE ingest SET state = 'queued' WHERE session = ? AND message_id = ? "
            "AND state IN ('queued', 'running')",
            (session, message_id),
        )
        await self._conn.commit()

    async def pending_for(self, session: str) -> list[Entry]:
        """:meth:`pending` of one session (what the holder of its room runs), oldest first."""
        return await self._select(
            "WHERE session = ? AND state IN ('queued', 'running') ORDER BY seq", (session,)
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
        await self._conn.execute(
            "UPDATE ingest SET state = ?, result = COALESCE(?, result), "
            "merged_into = COALESCE(?, merged_into) WHERE session = ? AND message_id = ?",
            (
                state,
                None if result is None else json.dumps(result, ensure_ascii=False),
                merged_into,
                session,
                message_id,
            ),
        )
        await self._conn.commit()

    async def set_text(self, session: str, message_id: str, text: str) -> None:
        """Replace the text of a waiting message (coalesced parts join it)."""
        await self._conn.execute(
            "UPDATE ingest SET text = ? WHERE session = ? AND message_id = ?",
            (text, session, message_id),
        )
        await self._conn.commit()

    async def forget(self, session: str, message_id: str) -> None:
        """Drop a message whose run failed, so its sender's retry runs it again."""
        await self._conn.execute(
            "DELETE FROM ingest WHERE session = ? AND message_id = ?", (session, message_id)
        )
        await self._conn.commit()

    async def record_sent(self, session: str, platform_id: str, event_id: str) -> None:
        """Remember that the platform message ``platform_id`` carried ``event_id``."""
        await self._conn.execute(
            "INSERT OR REPLACE INTO sent (session, platform_id, event_id, created) "
            "VALUES (?, ?, ?, ?)",
            (session, platform_id, event_id, time.time()),
        )
        await self._conn.commit()

    async def sent_event(self, session: str, platform_id: str) -> str | None:
        """The id of the event of ``session`` the platform message ``platform_id`` carried."""
        cursor = await self._conn.execute(
            "SELECT event_id FROM sent WHERE session = ? AND platform_id = ?",
            (session, platform_id),
        )
        row = await cursor.fetchone()
        return None if row is None else str(row[0])

    async def _select(self, where: str, args: tuple[Any, ...]) -> list[Entry]:
        cursor = await self._conn.execute(
            "SELECT session, key, message_id, author, text, state, merged_into, result, seq, "
            f"reply_to FROM ingest {where}",
            args,
        )
        rows = await cursor.fetchall()
        return [
            Entry(
                session=row[0],
                key=row[1],
                message_id=row[2],
                author=row[3],
                text=row[4],
                state=row[5],
                merged_into=row[6],
                result=None if row[7] is None else json.loads(row[7]),
                seq=int(row[8]),
                reply_to=row[9],
            )
            for row in rows
        ]
