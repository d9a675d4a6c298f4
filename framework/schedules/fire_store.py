"""The fire ledger: every scheduled fire recorded before it runs, so each due time runs once.

A fire's id is deterministic (``standup@2026-03-02T08:30:00Z``: the schedule and its due
time, see ``timing.py``), and the ledger's primary key is that id. A scheduler *claims* a
fire before starting it: the claim inserts the row, so of two schedulers on one data folder
(or several replicas on one database) exactly one gets it, whatever their timing; the others
get ``None`` and move on. The claim is a lease (``claimed_until``): a scheduler that dies
mid-run leaves a ``running`` row that another one takes over once the lease has run out
(``attempts`` counts the takeovers), and the dead one's late :meth:`FireStore.record`, should
it come back, is refused (the row has a new owner). Hermes's cron double-fired with two
scheduler processes (#59229) because "is it due" and "mark it run" were two steps; here they
are one statement.

Besides the fires: each schedule's cursor (the last due time dealt with, never moved back),
the paused schedules, and each scheduler's heartbeat (a stalled one shows).

Two backends with the same behaviour: ``schedules.sqlite`` in the data folder
(:mod:`~framework.schedules.fire_sqlite`) and tables on the database
(:mod:`~framework.schedules.fire_pg`). Open one with :func:`open_fire_store`.

The store never reads the wall clock: every method that needs the time takes ``now`` (a
UTC-aware datetime) from the scheduler, whose clock is simulated in tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from framework.schedules.fires import (
    BEATS_KEPT,
    TERMINAL,
    Fire,
    FireState,
    FireStore,
    Heartbeat,
    MissedState,
)

if TYPE_CHECKING:
    from framework.database.pool import Database

__all__ = [
    "BEATS_KEPT",
    "TERMINAL",
    "Fire",
    "FireState",
    "FireStore",
    "Heartbeat",
    "MissedState",
    "open_fire_store",
]


async def open_fire_store(data_dir: Path, db: Database | None) -> FireStore:
    """The fire ledger of the data folder ``data_dir``: ``schedules.sqlite`` there when
    ``db`` is None (created if missing), else the ``schedule_*`` tables on ``db`` (created
    under the migration lock if missing; every replica on it shares them).
    :class:`~framework.errors.StorageError` when it cannot be opened."""
    if db is None:
        from framework.data_folder import DataFolder
        from framework.schedules.fire_sqlite import SqliteFireStore

        return await SqliteFireStore.open(DataFolder(data_dir).schedules)
    from framework.schedules.fire_pg import PgFireStore

    return await PgFireStore.open(db)
