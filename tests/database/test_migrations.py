"""Migrations: applied once, whichever replica gets there first, however many start at once."""

from __future__ import annotations

import asyncio

from framework.database.migrations import Migration, apply_migrations
from framework.database.pool import Database

STEPS = [
    Migration("demo", 1, "CREATE TABLE demo (id INT PRIMARY KEY); INSERT INTO demo VALUES (1)"),
    Migration("demo", 2, "ALTER TABLE demo ADD COLUMN note TEXT"),
]


async def test_replicas_starting_together_apply_each_step_once(pg_url: str) -> None:
    replicas = [await Database.open(pg_url, max_size=2) for _ in range(4)]
    try:
        applied = await asyncio.gather(*(apply_migrations(db, STEPS) for db in replicas))
        assert sorted(len(a) for a in applied) == [0, 0, 0, 2], "one replica applied both steps"
        async with replicas[0].connection() as conn:
            rows = await (await conn.execute("SELECT id, note FROM demo")).fetchall()
        assert rows == [{"id": 1, "note": None}], "the insert ran once"
        assert await apply_migrations(replicas[1], STEPS) == [], "a restart applies nothing"
    finally:
        for db in replicas:
            await db.close()
