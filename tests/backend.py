"""Which backend the test run uses: SQLite files (the default) or PostgreSQL for every store.

``make test-pg`` sets ``STAFFROOM_TEST_BACKEND=postgres``: then each test gets a database of
its own when it first asks (the autouse ``backend`` fixture in tests/conftest.py), and the
shared fixtures put it in what they build — the ``settings`` fixtures,
``STAFFROOM_DATABASE_URL`` for commands run in this process (``cli``) and as real processes
(``process_env``: ``staffroom serve``, ``run``).
Tests that build their own ``Settings`` pass ``database=backend_database()``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from framework.serving.ledger import Ledger
    from framework.settings import Settings

BACKEND = os.environ.get("STAFFROOM_TEST_BACKEND", "sqlite")
if BACKEND not in ("sqlite", "postgres"):
    raise SystemExit(f"STAFFROOM_TEST_BACKEND={BACKEND!r}: use sqlite or postgres")

_current: list[str] = []  # the running test's database URL, once it has one
_make: list[Callable[[], str]] = []  # how it gets one, on the postgres backend


def backend_database() -> str | None:
    """This test's PostgreSQL URL on the postgres backend; None on SQLite. The database is
    created when first asked for: a test that never opens a store (a file format's, a
    parser's) does not pay for one."""
    if not _current and _make:
        _current.append(_make[0]())
    return _current[0] if _current else None


def use_database(make: Callable[[], str] | None) -> None:
    """Set (or clear) how this test's database is made; the ``backend`` fixture calls it."""
    _current.clear()
    _make[:] = [make] if make else []


@asynccontextmanager
async def stored_ledger(settings: Settings) -> AsyncIterator[Ledger]:
    """The ingest ledger a gateway on ``settings`` opens (the SQLite file, or the database's
    tables), opened as another process would: what a killed process leaves is written here."""
    from framework.data_folder import DataFolder
    from framework.database.pool import Database
    from framework.serving.ledgers import open_ledger

    db = await Database.open(settings.database) if settings.database else None
    try:
        ledger = await open_ledger(DataFolder(settings.data_dir).ingest, db)
        try:
            yield ledger
        finally:
            await ledger.close()
    finally:
        if db is not None:
            await db.close()
