"""The fire ledger on PostgreSQL: the tables every replica on one database shares.

Several ``staffroom serve`` replicas each run a scheduler, and every one of them sees the
same due times. Which of them runs a fire is decided by the primary key of
``schedule_fires`` and one ``INSERT ... ON CONFLICT (fire_id) DO UPDATE ... WHERE ...
RETURNING`` per claim: PostgreSQL lets one insert of an id through, and a takeover's
``WHERE`` (the claim has run out) is checked against the row as the winner left it, so of
replicas taking over one fire at once exactly one does. Never a read then a write.

Times are ``timestamptz``, set from the scheduler's clock (``now`` passed in), not the
database's: the store and its tests agree on one clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database
from framework.database.url import redact
from framework.errors import InputError
from framework.schedules.fires import (
    BEATS_KEPT,
    Fire,
    FireState,
    FireStore,
    Heartbeat,
    MissedState,
    check_terminal,
    lease_end,
    utc,
)

__all__ = ["MIGRATIONS", "PgFireStore"]

MIGRATIONS = [
    Migration(
        "schedules",
        1,
        """
        CREATE TABLE schedule_fires (
            fire_id TEXT PRIMARY KEY,
            schedule TEXT NOT NULL,
            due TIMESTAMPTZ NOT NULL,
            kind TEXT NOT NULL,
            state TEXT NOT NULL,
            owner TEXT,
            attempts INTEGER NOT NULL,
            claimed_until TIMESTAMPTZ,
            started TIMESTAMPTZ,
            finished TIMESTAMPTZ,
            detail TEXT NOT NULL DEFAULT '',
            session TEXT
        );
        CREATE INDEX schedule_fires_due ON schedule_fires (schedule, due);
        CREATE INDEX schedule_fires_all_due ON schedule_fires (due);
        CREATE INDEX schedule_fires_running ON schedule_fires (schedule)
            WHERE state = 'running';
        CREATE TABLE schedule_cursors (
            schedule TEXT PRIMARY KEY,
            last_due TIMESTAMPTZ NOT NULL
        );
        CREATE TABLE schedule_pauses (
            schedule TEXT PRIMARY KEY,
            since TIMESTAMPTZ NOT NULL,
            paused_by TEXT NOT NULL
        );
        CREATE TABLE scheduler_beats (
            owner TEXT PRIMARY KEY,
            host TEXT NOT NULL,
            pid INTEGER NOT NULL,
            since TIMESTAMPTZ NOT NULL,
            last TIMESTAMPTZ NOT NULL
        );
        """,
    ),
]
"""The ledger's tables (feature ``schedules``), applied by :func:`apply_migrations`."""

_FIRE = (
    "fire_id, schedule, due, kind, state, owner, attempts, claimed_until, started, finished, "
    "detail, session"
)

_CLAIM = f"""
INSERT INTO schedule_fires ({_FIRE})
VALUES (%s, %s, %s, %s, 'running', %s, 1, %s, %s, NULL, '', NULL)
ON CONFLICT (fire_id) DO UPDATE SET
    owner = EXCLUDED.owner,
    attempts = schedule_fires.attempts + 1,
    claimed_until = EXCLUDED.claimed_until,
    started = EXCLUDED.started
WHERE schedule_fires.state = 'running' AND schedule_fires.claimed_until < EXCLUDED.started
RETURNING {_FIRE}
"""


def _time(value: datetime | None) -> datetime | None:
    # psycopg gives the session's time zone: the store's callers compare in UTC.
    return None if value is None else value.astimezone(UTC)


def _fire(row: dict[str, Any]) -> Fire:
    return Fire(
        fire_id=row["fire_id"],
        schedule=row["schedule"],
        due=row["due"].astimezone(UTC),
        kind=row["kind"],
        state=row["state"],
        owner=row["owner"],
        attempts=row["attempts"],
        claimed_until=_time(row["claimed_until"]),
        started=_time(row["started"]),
        finished=_time(row["finished"]),
        detail=row["detail"],
        session=row["session"],
    )


def _admit(field: str, value: str | None) -> None:
    """PostgreSQL text cannot hold NUL: say so instead of failing as a database error."""
    if value is not None and "\x00" in value:
        raise InputError(
            f"the {field} contains a NUL character, which the shared database cannot store",
            field=field,
            fix="remove the NUL (\\u0000) characters",
        )


class PgFireStore(FireStore):
    """``schedule_fires``, ``schedule_cursors``, ``schedule_pauses`` and ``scheduler_beats``
    through a replica's pool (autocommit: each statement on its own)."""

    def __init__(self, db: Database) -> None:
        """Use ``db`` (already migrated: see :meth:`open`); the pool stays its owner's."""
        self.db = db

    @classmethod
    async def open(cls, db: Database) -> PgFireStore:
        """Create the tables if missing (once, under the migration lock, whichever replica
        comes first) and use ``db``. :class:`StorageError` if the database refuses."""
        await apply_migrations(db, MIGRATIONS, what="the schedules' fire ledger")
        return cls(db)

    @property
    def where(self) -> str:
        """The database (its URL without the password) and the fires' table."""
        return f"{redact(self.db.url)} (table schedule_fires)"

    async def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[dict[str, Any]]:
        async with self.db.connection() as conn:
            cursor = await conn.execute(sql, tuple(args))
            return [dict(row) for row in await cursor.fetchall()]

    async def _execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        async with self.db.connection() as conn:
            cursor = await conn.execute(sql, tuple(args))
            return cursor.rowcount

    async def claim(
        self,
        fire_id: str,
        schedule: str,
        due: datetime,
        kind: str,
        owner: str,
        *,
        now: datetime,
        lease_s: float,
    ) -> Fire | None:
        """See :meth:`FireStore.claim`."""
        until = lease_end(now, lease_s)
        args = (fire_id, schedule, utc(due, field="due"), kind, owner, until, utc(now))
        rows = await self._rows(_CLAIM, args)
        return _fire(rows[0]) if rows else None

    async def record(
        self,
        fire_id: str,
        owner: str,
        state: FireState,
        *,
        now: datetime,
        detail: str = "",
        session: str | None = None,
    ) -> bool:
        """See :meth:`FireStore.record`."""
        check_terminal(state)
        _admit("detail", detail)
        changed = await self._execute(
            "UPDATE schedule_fires SET state = %s, finished = %s, detail = %s,"
            " claimed_until = NULL, session = COALESCE(%s, session)"
            " WHERE fire_id = %s AND owner = %s AND state = 'running'",
            (state, utc(now), detail, session, fire_id, owner),
        )
        return changed == 1

    async def record_missed(
        self,
        fire_id: str,
        schedule: str,
        due: datetime,
        state: MissedState,
        *,
        now: datetime,
        detail: str,
        kind: str = "due",
    ) -> bool:
        """See :meth:`FireStore.record_missed`."""
        check_terminal(state)
        _admit("detail", detail)
        changed = await self._execute(
            f"INSERT INTO schedule_fires ({_FIRE})"
            " VALUES (%s, %s, %s, %s, %s, NULL, 0, NULL, NULL, %s, %s, NULL)"
            " ON CONFLICT (fire_id) DO NOTHING",
            (fire_id, schedule, utc(due, field="due"), kind, state, utc(now), detail),
        )
        return changed == 1

    async def set_session(self, fire_id: str, owner: str, session: str) -> bool:
        """See :meth:`FireStore.set_session`."""
        changed = await self._execute(
            "UPDATE schedule_fires SET session = %s"
            " WHERE fire_id = %s AND owner = %s AND state = 'running'",
            (session, fire_id, owner),
        )
        return changed == 1

    async def renew(
        self, fire_ids: Sequence[str], owner: str, *, now: datetime, lease_s: float
    ) -> list[str]:
        """See :meth:`FireStore.renew`."""
        if not fire_ids:
            return []
        rows = await self._rows(
            "UPDATE schedule_fires SET claimed_until = %s"
            " WHERE fire_id = ANY(%s) AND owner = %s AND state = 'running' RETURNING fire_id",
            (lease_end(now, lease_s), list(fire_ids), owner),
        )
        return [row["fire_id"] for row in rows]

    async def running(self, schedule: str | None = None) -> list[Fire]:
        """See :meth:`FireStore.running`."""
        where, args = ("AND schedule = %s", (schedule,)) if schedule is not None else ("", ())
        rows = await self._rows(
            f"SELECT {_FIRE} FROM schedule_fires WHERE state = 'running' {where}"
            " ORDER BY due, fire_id",
            args,
        )
        return [_fire(row) for row in rows]

    async def get(self, fire_id: str) -> Fire | None:
        """See :meth:`FireStore.get`."""
        rows = await self._rows(
            f"SELECT {_FIRE} FROM schedule_fires WHERE fire_id = %s", (fire_id,)
        )
        return _fire(rows[0]) if rows else None

    async def history(self, schedule: str | None = None, limit: int = 50) -> list[Fire]:
        """See :meth:`FireStore.history`."""
        where, args = ("WHERE schedule = %s", [schedule]) if schedule is not None else ("", [])
        rows = await self._rows(
            f"SELECT {_FIRE} FROM schedule_fires {where} ORDER BY due DESC, fire_id DESC LIMIT %s",
            (*args, max(0, limit)),
        )
        return [_fire(row) for row in rows]

    async def cursor(self, schedule: str) -> datetime | None:
        """See :meth:`FireStore.cursor`."""
        rows = await self._rows(
            "SELECT last_due FROM schedule_cursors WHERE schedule = %s", (schedule,)
        )
        return _time(rows[0]["last_due"]) if rows else None

    async def advance(self, schedule: str, to: datetime) -> None:
        """See :meth:`FireStore.advance`."""
        await self._execute(
            "INSERT INTO schedule_cursors (schedule, last_due) VALUES (%s, %s)"
            " ON CONFLICT (schedule) DO UPDATE"
            " SET last_due = GREATEST(schedule_cursors.last_due, EXCLUDED.last_due)",
            (schedule, utc(to, field="to")),
        )

    async def set_paused(self, schedule: str, paused: bool, *, by: str, now: datetime) -> None:
        """See :meth:`FireStore.set_paused`."""
        if paused:
            _admit("by", by)
            await self._execute(
                "INSERT INTO schedule_pauses (schedule, since, paused_by) VALUES (%s, %s, %s)"
                " ON CONFLICT (schedule) DO NOTHING",
                (schedule, utc(now), by),
            )
        else:
            await self._execute("DELETE FROM schedule_pauses WHERE schedule = %s", (schedule,))

    async def paused(self) -> dict[str, datetime]:
        """See :meth:`FireStore.paused`."""
        rows = await self._rows("SELECT schedule, since FROM schedule_pauses ORDER BY schedule")
        return {row["schedule"]: row["since"].astimezone(UTC) for row in rows}

    async def beat(self, owner: str, *, now: datetime, host: str, pid: int) -> None:
        """See :meth:`FireStore.beat`."""
        at = utc(now)
        async with self.db.connection() as conn:
            await conn.execute(
                "INSERT INTO scheduler_beats (owner, host, pid, since, last)"
                " VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (owner) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid,"
                " last = GREATEST(scheduler_beats.last, EXCLUDED.last)",
                (owner, host, pid, at, at),
            )
            await conn.execute("DELETE FROM scheduler_beats WHERE last < %s", (at - BEATS_KEPT,))

    async def heartbeats(self) -> list[Heartbeat]:
        """See :meth:`FireStore.heartbeats`."""
        rows = await self._rows(
            "SELECT owner, host, pid, since, last FROM scheduler_beats ORDER BY last DESC, owner"
        )
        return [
            Heartbeat(
                owner=row["owner"],
                host=row["host"],
                pid=row["pid"],
                since=row["since"].astimezone(UTC),
                last=row["last"].astimezone(UTC),
            )
            for row in rows
        ]

    async def close(self) -> None:
        """Nothing to release: the pool is the replica's (``Database.close``)."""
