"""The webhook outbox on PostgreSQL: each delivery recorded before it is made, once for every
replica, so a crash loses none and two replicas send none twice.

Without a database, :class:`~framework.serving.webhooks.WebhookDispatcher` queues deliveries
in memory: a crash loses what was queued. With one, every (target url, session, event id) is
a row of ``staffroom_webhook_outbox``, inserted with ``ON CONFLICT DO NOTHING`` when the event
reaches the dispatcher's listener: the replica whose insert went through delivers it, any
other that saw the same event does not. The row keeps the event, its state (``pending``,
``delivered``, ``failed``) and who holds it (``owner``, the replica's :attr:`Database.owner`).

A row left ``pending`` longer than ``stale_after`` seconds (past any delivery's retries) was
held by a replica that died: :meth:`PgWebhookOutbox.orphans`, called as a dispatcher starts,
takes such rows over (one atomic ``UPDATE ... RETURNING`` each, so two starting replicas do
not both take one) and delivers them. A crash between the receiver's 2xx and the row's
``delivered`` can still send one event twice: receivers deduplicate on the event id.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database
from framework.serving.webhooks import Delivery
from framework.sessions.events import Event

__all__ = ["MIGRATIONS", "STALE_SECONDS", "PgWebhookOutbox"]

MIGRATIONS = [
    Migration(
        "webhook_outbox",
        1,
        """
        CREATE TABLE staffroom_webhook_outbox (
            url TEXT NOT NULL,
            session TEXT NOT NULL,
            event_id TEXT NOT NULL,
            event TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            owner TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            status INTEGER,
            error TEXT,
            created TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (url, session, event_id)
        );
        CREATE INDEX staffroom_webhook_outbox_pending ON staffroom_webhook_outbox (updated)
            WHERE state = 'pending';
        """,
    )
]
"""The outbox's table (feature ``webhook_outbox``), applied by :func:`apply_migrations`."""

STALE_SECONDS = 600.0
"""A pending delivery untouched this long lost its replica (retries take about a minute)."""


class PgWebhookOutbox:
    """``staffroom_webhook_outbox``: which replica delivers which event to which URL."""

    def __init__(self, db: Database, stale_after: float) -> None:
        self.db = db
        self.stale_after = stale_after

    @classmethod
    async def open(cls, db: Database, *, stale_after: float = STALE_SECONDS) -> PgWebhookOutbox:
        """Create the table if missing (under the migration lock)."""
        await apply_migrations(db, MIGRATIONS, what="the webhook outbox")
        return cls(db, stale_after)

    async def record(self, url: str, session: str, event: Event) -> bool:
        """Record the delivery of ``event`` to ``url``; True when this replica is the first
        to (it delivers), False when it is already recorded (another replica's, or done)."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO staffroom_webhook_outbox (url, session, event_id, event, owner) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING event_id",
                (url, session, event.id, event.to_json(), self.db.owner),
            )
            return await cursor.fetchone() is not None

    async def finish(self, delivery: Delivery) -> None:
        """Mark a delivery this replica made ``delivered`` or ``failed`` (with why)."""
        async with self.db.connection() as conn:
            await conn.execute(
                "UPDATE staffroom_webhook_outbox SET state = %s, attempts = %s, status = %s, "
                "error = %s, updated = now() WHERE url = %s AND session = %s AND event_id = %s",
                (
                    "delivered" if delivery.ok else "failed",
                    delivery.attempts,
                    delivery.status,
                    delivery.error,
                    delivery.url,
                    delivery.session,
                    delivery.event_id,
                ),
            )

    async def orphans(self, urls: Sequence[str]) -> list[tuple[str, str, Event]]:
        """Take over the pending deliveries to ``urls`` that no live replica holds (untouched
        for ``stale_after`` seconds), oldest first: ``(url, session, event)`` to deliver."""
        async with self.db.connection() as conn:
            cursor = await conn.execute(
                "UPDATE staffroom_webhook_outbox SET owner = %s, updated = now() "
                "WHERE (url, session, event_id) IN (SELECT url, session, event_id "
                "FROM staffroom_webhook_outbox WHERE state = 'pending' AND url = ANY(%s) "
                "AND updated < now() - make_interval(secs => %s) FOR UPDATE SKIP LOCKED) "
                "RETURNING url, session, event, created",
                (self.db.owner, list(urls), self.stale_after),
            )
            rows = await cursor.fetchall()
        rows.sort(key=lambda row: row["created"])
        return [
            (row["url"], row["session"], Event.from_dict(json.loads(row["event"]))) for row in rows
        ]
