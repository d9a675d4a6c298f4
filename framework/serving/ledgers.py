"""Which ingest ledger a gateway opens: the data folder's SQLite file, or, with a database,
the table every replica on it shares.

Its own module because it names both backends: ``pg_ledger.py`` builds on ``ledger.py``'s
:class:`~framework.serving.ledger.Entry`, so the choice cannot live in ``ledger.py``.
"""

from __future__ import annotations

from pathlib import Path

from framework.database.pool import Database
from framework.serving.ledger import RETENTION_SECONDS, IngestLedger, Ledger
from framework.serving.pg_ledger import PgIngestLedger

__all__ = ["open_ledger"]


async def open_ledger(
    path: Path, db: Database | None, *, retention: float = RETENTION_SECONDS
) -> Ledger:
    """The ingest ledger at ``path`` (SQLite, this process's) when ``db`` is None, else the
    one on ``db`` that every replica shares (``path`` unused); both drop ids older than
    ``retention`` seconds as they open."""
    if db is None:
        return await IngestLedger.open(path, retention=retention)
    return await PgIngestLedger.open(db, retention=retention)
