"""Replicas sharing one PostgreSQL database write one SOP at once and lose nothing.

Each replica is a SopStore on its own pool, as two processes would have; their writes of one
SOP wait for each other (an advisory lock on its id), as processes sharing sops.sqlite do.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from test_store import STEPS, version  # tests/sop is on sys.path

from framework.database.pool import Database
from framework.errors import SopCardError
from framework.sop.model import Status
from framework.sop.store import SopStore

TABLES = ("sops", "versions", "change_log", "approvals", "reviewers", "trials")
TABLES += ("references", "outcomes", "replacements")
WRITERS, EACH = 4, 10  # per replica 2 writers, 20 versions


@pytest.fixture
async def replicas(pg_url: str) -> AsyncIterator[tuple[SopStore, SopStore]]:
    dbs = [await Database.open(pg_url, max_size=4) for _ in range(2)]
    try:
        # Both start at once: the tables are made once, whichever comes first.
        a, b = await asyncio.gather(*(SopStore.open_database(db) for db in dbs))
        yield a, b
    finally:
        for db in dbs:
            await db.close()


async def add_versions(store: SopStore, author: str) -> list[int]:
    """Add ``EACH`` versions by ``author``, each under the number the store says is next; on
    the documented refusal (another writer took that number first) ask again."""
    added: list[int] = []
    while len(added) < EACH:
        n = await store.next_version("tech-article")
        try:
            added.append((await store.add_version(version(n, body=f"{author}{n}"))).version)
        except SopCardError as err:
            assert "already exists with different content" in str(err)
    return added


async def test_versions_added_at_once_are_numbered_without_gap_or_duplicate(
    replicas: tuple[SopStore, SopStore],
) -> None:
    writers = [(replicas[w % 2], f"w{w}-") for w in range(WRITERS)]
    added = await asyncio.gather(*(add_versions(store, who) for store, who in writers))
    every = list(range(1, WRITERS * EACH + 1))
    assert sorted(n for numbers in added for n in numbers) == every
    stored = await replicas[1].versions("tech-article")
    assert [v.version for v in stored] == every
    # Each stored version is the one its writer was told it added: nothing overwritten.
    assert sorted(v.body for v in stored) == sorted(
        f"{who}{n}" for (_, who), numbers in zip(writers, added, strict=True) for n in numbers
    )


async def test_publishers_racing_leave_one_trial_open(
    replicas: tuple[SopStore, SopStore],
) -> None:
    a, b = replicas
    sops = [f"sop-{n}" for n in range(8)]
    for sop_id in sops:
        await a.add_version(replace(version(1, status=Status.PUBLISHED), sop_id=sop_id))
        for n in (2, 3):
            draft = replace(version(n, steps=STEPS[::-1], body=str(n)), sop_id=sop_id)
            await a.add_version(draft)
            await b.approve(sop_id, n, "alice")
    # Per SOP: one replica publishes @2 while the other publishes @3, and both publish @2 again.
    await asyncio.gather(
        *(a.publish(sop_id, 2, by="ann") for sop_id in sops),
        *(b.publish(sop_id, 3, by="bob") for sop_id in sops),
        *(b.publish(sop_id, 2, by="ben") for sop_id in sops),
    )
    for sop_id in sops:
        trials = await a.trials(sop_id)
        assert sorted(t.version for t in trials) == [2, 3], sop_id
        assert len([t for t in trials if t.ended_at is None]) == 1, "one open trial per SOP"
        two = await b.get(sop_id, 2)
        assert two.status is Status.PUBLISHED
        published = [e for e in two.change_log if e.why == "published"]
        assert len(published) == 1, "the second publish of @2 found it published: no entry"


async def test_a_replica_started_later_sees_the_store_and_its_tables_clash_with_nothing(
    replicas: tuple[SopStore, SopStore], pg_url: str
) -> None:
    added = await replicas[0].add_version(version(1, status=Status.PUBLISHED))
    db = await Database.open(pg_url, max_size=2)
    try:
        later = await SopStore.open_database(db)  # migrated already: applies nothing
        assert await later.get("tech-article") == added
        assert "staffroom_sop_" in str(later.path)
        async with db.connection() as conn:
            cursor = await conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
            tables = {row["table_name"] for row in await cursor.fetchall()}
        assert tables - {"staffroom_migrations"} == {f"staffroom_sop_{t}" for t in TABLES}
    finally:
        await db.close()
