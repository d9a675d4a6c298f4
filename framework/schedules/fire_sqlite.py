"""``schedules.sqlite``: the fire ledger in the data folder (no database).

Every process with a scheduler on the folder (``staffroom serve``, ``staffroom schedules
run``, several of them) opens the same file: WAL, so readers never wait for the writer, and a
busy timeout, so writers queue instead of failing. Each decision is one statement (an
``INSERT ... ON CONFLICT DO UPDATE ... WHERE ... RETURNING``, a conditional ``UPDATE``):
SQLite takes the file's write lock before such a statement reads, so "is it free" and "take
it" happen with no other process in between, and exactly one of two claims of a fire wins.
(A transaction of several statements would need ``BEGIN IMMEDIATE`` for that; none is used.)

Times are ISO 8601 text in UTC with microseconds (``2026-03-02T08:30:00.000000Z``): fixed
width, so text order is time order, and a person reading the file sees dates.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import aiosqlite

from framework.errors import StorageError
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

__all__ = ["SqliteFireStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schedule_fires (
    fire_id TEXT PRIMARY KEY,
    schedule TEXT NOT NULL,
    due TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT,
    attempts INTEGER NOT NULL,
    claimed_until TEXT,
    started TEXT,
    finished TEXT,
    detail TEXT NOT NULL DEFAULT '',
    session TEXT
);
CREATE INDEX IF NOT EXISTS schedule_fires_due ON schedule_fires (schedule, due);
CREATE INDEX IF NOT EXISTS schedule_fires_all_due ON schedule_fires (due);
CREATE INDEX IF NOT EXISTS schedule_fires_running ON schedule_fires (schedule)
    WHERE state = 'running';
CREATE TABLE IF NOT EXISTS schedule_cursors (
    schedule TEXT PRIMARY KEY,
    last_due TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS schedule_pauses (
    schedule TEXT PRIMARY KEY,
    since TEXT NOT NULL,
    paused_by TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scheduler_beats (
    owner TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since TEXT NOT NULL,
    last TEXT NOT NULL
);
"""

_FIRE = (
    "fire_id, schedule, due, kind, state, owner, attempts, claimed_until, started, finished, "
    "detail, session"
)

# Insert, or take over a running fire whose claim ran out; RETURNING gives the row only when
# this statement wrote it (a DO UPDATE whose WHERE is false returns nothing).
_CLAIM = f"""
INSERT INTO schedule_fires ({_FIRE})
VALUES (?, ?, ?, ?, 'running', ?, 1, ?, ?, NULL, '', NULL)
ON CONFLICT (fire_id) DO UPDATE SET
    owner = excluded.owner,
    attempts = schedule_fires.attempts + 1,
    claimed_until = excluded.claimed_until,
    started = excluded.started
WHERE schedule_fires.state = 'running' AND schedule_fires.claimed_until < excluded.started
RETURNING {_FIRE}
"""

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def _text(moment: datetime, field: str = "now") -> str:
    return utc(moment, field=field).strftime(_TIME_FORMAT)


def _time(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _fire(row: sqlite3.Row) -> Fire:
    due = _time(row["due"])
    assert due is not None  # NOT NULL in the table
    return Fire(
        fire_id=row["fire_id"],
        schedule=row["schedule"],
        due=due,
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


class SqliteFireStore(FireStore):
    """The ledger's tables in ``schedules.sqlite``, one connection per process, each
    statement committed on its own."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        """Use ``conn`` (:meth:`open` made it, in autocommit mode) on ``path``."""
        self._conn = conn
        self._conn.row_factory = sqlite3.Row
        self.path = path
        # One statement at a time on the shared connection: aiosqlite runs them on one thread
        # anyway, and a RETURNING must be read to its end before the next one starts.
        self._serial = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path) -> SqliteFireStore:
        """Open (creating) the file and its tables; :class:`StorageError` when it cannot be
        opened or used."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # timeout: how long a statement waits for another process's write lock.
            conn = await aiosqlite.connect(path, timeout=30, isolation_level=None)
        except (OSError, aiosqlite.Error) as exc:
            raise StorageError(f"cannot open the schedules' fire ledger {path}: {exc}") from exc
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.executescript(_SCHEMA)
        except aiosqlite.Error as exc:
            await conn.close()
            raise StorageError(
                f"cannot use the schedules' fire ledger {path}: {exc}; move it aside (the "
                "schedules start again from now: their past fires and pauses are in the "
                "file moved aside)"
            ) from exc
        return cls(conn, path)

    @property
    def where(self) -> str:
        """The file."""
        return str(self.path)

    async def _rows(self, sql: str, args: Sequence[Any] = ()) -> list[sqlite3.Row]:
        async with self._serial:
            try:
                return list(await self._conn.execute_fetchall(sql, args))
            except sqlite3.Error as exc:
                raise StorageError(f"the fire ledger {self.path}: {exc}") from exc

    async def _execute(self, sql: str, args: Sequence[Any] = ()) -> int:
        async with self._serial:
            try:
                cursor = await self._conn.execute(sql, args)
            except sqlite3.Error as exc:
                raise StorageError(f"the fire ledger {self.path}: {exc}") from exc
            changed = cursor.rowcount
            await cursor.close()
            return changed

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
        until = lease_end(now, lease_s).strftime(_TIME_FORMAT)
        args = (fire_id, schedule, _text(due, "due"), kind, owner, until, _text(now))
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
        changed = await self._execute(
            "UPDATE schedule_fires SET state = ?, finished = ?, detail = ?, claimed_until = NULL,"
            " session = COALESCE(?, session)"
            " WHERE fire_id = ? AND owner = ? AND state = 'running'",
            (state, _text(now), detail, session, fire_id, owner),
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
        changed = await self._execute(
            f"INSERT INTO schedule_fires ({_FIRE})"
            " VALUES (?, ?, ?, ?, ?, NULL, 0, NULL, NULL, ?, ?, NULL)"
            " ON CONFLICT (fire_id) DO NOTHING",
            (fire_id, schedule, _text(due, "due"), kind, state, _text(now), detail),
        )
        return changed == 1

    async def set_session(self, fire_id: str, owner: str, session: str) -> bool:
        """See :meth:`FireStore.set_session`."""
        changed = await self._execute(
            "UPDATE schedule_fires SET session = ?"
            " WHERE fire_id = ? AND owner = ? AND state = 'running'",
            (session, fire_id, owner),
        )
        return changed == 1

    async def renew(
        self, fire_ids: Sequence[str], owner: str, *, now: datetime, lease_s: float
    ) -> list[str]:
        """See :meth:`FireStore.renew`."""
        if not fire_ids:
            return []
        until = lease_end(now, lease_s).strftime(_TIME_FORMAT)
        marks = ", ".join("?" * len(fire_ids))
        rows = await self._rows(
            f"UPDATE schedule_fires SET claimed_until = ?"
            f" WHERE fire_id IN ({marks}) AND owner = ? AND state = 'running' RETURNING fire_id",
            (until, *fire_ids, owner),
        )
        return [row["fire_id"] for row in rows]

    async def running(self, schedule: str | None = None) -> list[Fire]:
        """See :meth:`FireStore.running`."""
        where, args = ("AND schedule = ?", (schedule,)) if schedule is not None else ("", ())
        rows = await self._rows(
            f"SELECT {_FIRE} FROM schedule_fires WHERE state = 'running' {where}"
            " ORDER BY due, fire_id",
            args,
        )
        return [_fire(row) for row in rows]

    async def get(self, fire_id: str) -> Fire | None:
        """See :meth:`FireStore.get`."""
        rows = await self._rows(f"SELECT {_FIRE} FROM schedule_fires WHERE fire_id = ?", (fire_id,))
        return _fire(rows[0]) if rows else None

    async def history(self, schedule: str | None = None, limit: int = 50) -> list[Fire]:
        """See :meth:`FireStore.history`."""
        where, args = ("WHERE schedule = ?", [schedule]) if schedule is not None else ("", [])
        rows = await self._rows(
            f"SELECT {_FIRE} FROM schedule_fires {where} ORDER BY due DESC, fire_id DESC LIMIT ?",
            (*args, max(0, limit)),
        )
        return [_fire(row) for row in rows]

    async def cursor(self, schedule: str) -> datetime | None:
        """See :meth:`FireStore.cursor`."""
        rows = await self._rows(
            "SELECT last_due FROM schedule_cursors WHERE schedule = ?", (schedule,)
        )
        return _time(rows[0]["last_due"]) if rows else None

    async def advance(self, schedule: str, to: datetime) -> None:
        """See :meth:`FireStore.advance`."""
        # max() of the two texts is the later time: the format is fixed width.
        await self._execute(
            "INSERT INTO schedule_cursors (schedule, last_due) VALUES (?, ?)"
            " ON CONFLICT (schedule) DO UPDATE SET last_due = max(last_due, excluded.last_due)",
            (schedule, _text(to, "to")),
        )

    async def set_paused(self, schedule: str, paused: bool, *, by: str, now: datetime) -> None:
        """See :meth:`FireStore.set_paused`."""
        if paused:
            await self._execute(
                "INSERT INTO schedule_pauses (schedule, since, paused_by) VALUES (?, ?, ?)"
                " ON CONFLICT (schedule) DO NOTHING",
                (schedule, _text(now), by),
            )
        else:
            await self._execute("DELETE FROM schedule_pauses WHERE schedule = ?", (schedule,))

    async def paused(self) -> dict[str, datetime]:
        """See :meth:`FireStore.paused`."""
        rows = await self._rows("SELECT schedule, since FROM schedule_pauses ORDER BY schedule")
        return {row["schedule"]: datetime.fromisoformat(row["since"]) for row in rows}

    async def beat(self, owner: str, *, now: datetime, host: str, pid: int) -> None:
        """See :meth:`FireStore.beat`."""
        at = _text(now)
        await self._execute(
            "INSERT INTO scheduler_beats (owner, host, pid, since, last) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (owner) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
            " last = max(last, excluded.last)",
            (owner, host, pid, at, at),
        )
        forgotten = (utc(now) - BEATS_KEPT).strftime(_TIME_FORMAT)
        await self._execute("DELETE FROM scheduler_beats WHERE last < ?", (forgotten,))

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
                since=datetime.fromisoformat(row["since"]),
                last=datetime.fromisoformat(row["last"]),
            )
            for row in rows
        ]

    async def close(self) -> None:
        """Close the connection."""
        await self._conn.close()
