"""Is a scheduler alive? Its heartbeats, read without changing anything (``staffroom doctor``,
``GET /api/schedules``).

Every scheduler beats once a tick (5 s by default) into the fire ledger. One whose last beat
is older than :data:`STALLED_AFTER` is *stalled*: hung, or stopped (a stopped one's beat stays
in the ledger for a week, so a person sees when it last ran). Hermes's cron stalled silently
(#60703); here the age shows.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from framework.schedules.fires import FireStore, Heartbeat, utc

if TYPE_CHECKING:
    from framework.database.pool import Database

__all__ = ["STALLED_AFTER", "Beat", "beats", "read_heartbeats"]

STALLED_AFTER = timedelta(seconds=60)
"""A beat older than this is stalled: twelve ticks of the default 5 s, so a slow tick or a
database restart does not raise the alarm, and a real stall shows within a minute."""


@dataclass(frozen=True, slots=True)
class Beat:
    """A scheduler's heartbeat as a person reads it."""

    owner: str
    host: str
    pid: int
    since: datetime
    last: datetime
    age: float
    """Seconds since its last beat."""
    stalled: bool
    """No beat for over :data:`STALLED_AFTER`."""
    gone: bool
    """It ran on this machine and its process no longer exists (it stopped, not hung)."""


def _gone(host: str, pid: int) -> bool:
    if host != socket.gethostname():
        return False  # another machine's process: nothing to ask here
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def beats(found: list[Heartbeat], now: datetime) -> list[Beat]:
    """``found`` (latest first) with their age at ``now`` and whether each has stalled."""
    at = utc(now)
    out: list[Beat] = []
    for beat in found:
        age = max((at - beat.last).total_seconds(), 0.0)
        stalled = age > STALLED_AFTER.total_seconds()
        gone = stalled and _gone(beat.host, beat.pid)
        out.append(Beat(beat.owner, beat.host, beat.pid, beat.since, beat.last, age, stalled, gone))
    return out


async def read_heartbeats(data_dir: Path, db: Database | None) -> list[Heartbeat] | None:
    """The heartbeats in the fire ledger of ``data_dir`` (or of ``db``), latest first; None
    when no scheduler has run there (no ledger yet). Nothing is created or migrated: the
    doctor looks, it does not set up. :class:`~framework.errors.StorageError` when the ledger
    cannot be read."""
    if db is not None:
        from psycopg.errors import UndefinedTable

        from framework.schedules.fire_pg import PgFireStore

        try:
            return await PgFireStore(db).heartbeats()
        except UndefinedTable:
            return None
    return await _sqlite_heartbeats(data_dir)


async def _sqlite_heartbeats(data_dir: Path) -> list[Heartbeat] | None:
    import aiosqlite

    from framework.data_folder import DataFolder
    from framework.errors import StorageError
    from framework.schedules.fire_sqlite import SqliteFireStore

    path = DataFolder(data_dir).schedules
    if not path.is_file():
        return None
    # Read-only; a read-only folder cannot hold WAL's -shm file, so it is read as immutable.
    query = "mode=ro" if os.access(path.parent, os.W_OK) else "mode=ro&immutable=1"
    try:
        conn = await aiosqlite.connect(f"file:{path}?{query}", uri=True)
    except (OSError, aiosqlite.Error) as exc:
        raise StorageError(f"cannot open the schedules' fire ledger {path}: {exc}") from exc
    store: FireStore = SqliteFireStore(conn, path)
    try:
        return await store.heartbeats()
    finally:
        await store.close()
