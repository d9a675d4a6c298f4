"""Rate limits shared by replicas: two servers on one database spend one budget per token, as
one server's in-memory buckets would; a refused request learns how long to wait."""

from __future__ import annotations

import asyncio

from framework.database.pool import Database
from framework.surfaces.server.pg_buckets import PgRateBuckets
from framework.surfaces.server.state import RateBuckets, RateLimiter


async def test_two_replicas_share_one_budget(pg_url: str) -> None:
    pools = [await Database.open(pg_url, max_size=2) for _ in range(2)]
    try:
        a, b = await asyncio.gather(*(PgRateBuckets.open(db) for db in pools))
        assert [await a.acquire("ci", 5) for _ in range(3)] == [0.0] * 3
        *allowed, wait = [await b.acquire("ci", 5) for _ in range(3)]
        assert allowed == [0.0, 0.0]
        assert wait >= 1.0, "the 6th request of a 5-a-minute token is refused"
        assert wait <= 12, "one token refills in 12 s at 5 a minute"
        assert await a.acquire("other", 5) == 0.0, "each token has its own bucket"
        assert await a.acquire("ci", 0) == 0.0, "limit 0: no limit"
    finally:
        for db in pools:
            await db.close()


async def test_concurrent_takes_never_spend_one_token_twice(pg_url: str) -> None:
    pools = [await Database.open(pg_url, max_size=4) for _ in range(2)]
    try:
        a, b = await asyncio.gather(*(PgRateBuckets.open(db) for db in pools))
        waits = await asyncio.gather(*(r.acquire("ci", 10) for r in (a, b) * 15))
        assert waits.count(0.0) == 10, "exactly the budget got through"
    finally:
        for db in pools:
            await db.close()


async def test_the_database_and_memory_buckets_answer_alike(pg_url: str) -> None:
    db = await Database.open(pg_url, max_size=1)
    try:
        stores: list[RateBuckets] = [await PgRateBuckets.open(db), RateLimiter()]
        for store in stores:
            answers = [await store.acquire("t", 2) for _ in range(3)]
            assert answers[:2] == [0.0, 0.0] and answers[2] == 30.0, type(store).__name__
    finally:
        await db.close()


async def test_a_bucket_refills_with_the_database_clock(pg_url: str) -> None:
    db = await Database.open(pg_url, max_size=1)
    try:
        buckets = await PgRateBuckets.open(db)
        for _ in range(5):
            await buckets.acquire("ci", 5)
        assert await buckets.acquire("ci", 5) > 0
        async with db.connection() as conn:  # 12 s pass (one token at 5 a minute)
            await conn.execute("UPDATE staffroom_rate_buckets SET stamp = stamp - interval '12s'")
        assert await buckets.acquire("ci", 5) == 0.0
        assert await buckets.acquire("ci", 5) > 0, "one token came back, not more"
        async with db.connection() as conn:  # an hour idle: full again, never more than full
            await conn.execute("UPDATE staffroom_rate_buckets SET stamp = stamp - interval '1h'")
        assert [await buckets.acquire("ci", 5) for _ in range(6)].count(0.0) == 5
    finally:
        await db.close()
