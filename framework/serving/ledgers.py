"""Which ingest ledger a gateway opens: the data folder's SQLite file, or, with a database,
the tables every replica on it shares (one :class:`~framework.serving.ledger.IngestLedger`
either way)."""

from __future__ import annotations

from pathlib import Path

from framework.database.pool import Database
from framework.serving.ledger import RETENTION_SECONDS, IngestLedger

__all__ = ["open_ledger"]


async def open_ledger(
    path: Path, db: Database | None, *, retention: float = RETENTION_SECONDS
) -> IngestLedger:
    """The ingest ledger at ``path`` (SQLite, this process's) when ``db`` is None, else the
    one on ``db`` that every replica shares (``path`` unused); both drop ids older than
    ``retention`` seconds as they open."""
    if db is None:
        return await IngestLedger.open(path, retention=retention)
    return await IngestLedger.open_database(db, retention=retention)
