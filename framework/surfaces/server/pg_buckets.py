"""Rate-limit token buckets on PostgreSQL: one budget per token for every replica.

Behind a load balancer, per-process buckets would let a token make ``limit`` requests a minute
to each replica. Here a token's bucket is one row of ``staffroom_rate_buckets``, and taking a
request is one atomic ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``: the row lock orders
concurrent takes, so two replicas never spend the same token. The refill is computed with the
database's clock (``clock_timestamp()``), so replicas whose clocks differ agree on it.

Same semantics as the in-memory :class:`~framework.surfaces.server.state.RateLimiter`: a
bucket holds at most ``limit`` tokens, refills at ``limit`` a minute, starts full; a take
answers 0 (allowed) or the seconds to wait (at least 1).
"""

from __future__ import annotations

import math

from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database

__all__ = ["MIGRATIONS", "PgRateBuckets"]

MIGRATIONS = [
    Migration(
        "rate_buckets",
        1,
        """
        CREATE TABLE staffroom_rate_buckets (
            name TEXT PRIMARY KEY,
            tokens DOUBLE PRECISION NOT NULL,
            stamp TIMESTAMPTZ NOT NULL,
            granted BOOLEAN NOT NULL
        );
        """,
    )
]
"""The buckets' table (feature ``rate_buckets``), applied by :func:`apply_migrations`."""

# ``refill``: the tokens after the time since the last take, capped at the limit. The stamp
# never goes back: a take that waited on the row lock may have read the clock before the
# take it waited for wrote its stamp.
_REFILL = (
    "LEAST(%(limit)s::float8, b.tokens + %(rate)s::float8 * GREATEST(0, "
    "EXTRACT(EPOCH FROM clock_timestamp() - b.stamp)::float8))"
)

_TAKE = f"""
INSERT INTO staffroom_rate_buckets AS b (name, tokens, stamp, granted)
VALUES (%(name)s, %(limit)s::float8 - 1, clock_timestamp(), true)
ON CONFLICT (name) DO UPDATE SET
    tokens = CASE WHEN {_REFILL} >= 1 THEN {_REFILL} - 1 ELSE {_REFILL} END,
    stamp = GREATEST(b.stamp, clock_timestamp()),
    granted = {_REFILL} >= 1
RETURNING b.tokens, b.granted
"""


class PgRateBuckets:
    """Token buckets per token name in ``staffroom_rate_buckets``, shared by every replica."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @classmethod
    async def open(cls, db: Database) -> PgRateBuckets:
        """Create the table if missing (under the migration lock)."""
        await apply_migrations(db, MIGRATIONS, what="the rate limits")
        return cls(db)

    async def acquire(self, name: str, limit: int) -> float:
        """Take one request from ``name``'s bucket: 0 when allowed, else seconds to wait."""
        if limit <= 0:
            return 0.0
        rate = limit / 60.0
        async with self.db.connection() as conn:
            cursor = await conn.execute(_TAKE, {"name": name, "limit": limit, "rate": rate})
            row = await cursor.fetchone()
        assert row is not None, "INSERT ... ON CONFLICT DO UPDATE returns its row"
        if row["granted"]:
            return 0.0
        return max(1.0, math.ceil((1.0 - float(row["tokens"])) / rate))
