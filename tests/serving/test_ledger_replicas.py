"""Exactly-once across replicas: two replicas (two pools on one database) that claim the same
ids at the same moment let each id through once; every other claim sees the winner's entry.

(Two OS processes would show the same thing through the same SQL, but importing the framework
twice takes ~5 s each on the test machine: two pools keep the test under a second.)"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from framework.database.pool import Database
from framework.errors import InputError
from framework.serving.ledger import IngestLedger

KEYS = [f"m{i}" for i in range(50)]


def check_once(outcomes: dict[str, dict[str, str | None]]) -> None:
    """Each key: exactly one replica got None (claimed it), the other saw the claimer."""
    for key in KEYS:
        claimed = [name for name, got in outcomes.items() if got[key] is None]
        assert len(claimed) == 1, f"{key} claimed by {claimed}"
        others = [got[key] for name, got in outcomes.items() if name != claimed[0]]
        assert others == [claimed[0]] * len(others), f"{key}: the others saw {others}"


async def test_two_pools_claiming_the_same_keys_claim_each_once(pg_url: str) -> None:
    pools = [await Database.open(pg_url, max_size=5) for _ in range(2)]
    try:
        ledgers = await asyncio.gather(*(IngestLedger.open_database(db) for db in pools))

        async def replica(name: str, ledger: IngestLedger) -> dict[str, str | None]:
            keys = random.sample(KEYS, len(KEYS))
            got = await asyncio.gather(
                *(
                    ledger.claim("room:r", f"msg:{k}", message_id=k, author=name, text=k)
                    for k in keys
                )
            )
            return {k: None if e is None else e.author for k, e in zip(keys, got, strict=True)}

        a, b = await asyncio.gather(replica("a", ledgers[0]), replica("b", ledgers[1]))
        check_once({"a": a, "b": b})
        pending = await ledgers[1].pending()
        assert sorted(e.message_id for e in pending) == sorted(KEYS)
        assert len({e.seq for e in pending}) == len(KEYS), "one global order"
    finally:
        for db in pools:
            await db.close()


async def test_two_sqlite_connections_claim_each_key_once(tmp_path: Path) -> None:
    # The same contract on the default backend: two processes sharing one data folder.
    path = tmp_path / "ingest.sqlite"
    ledgers = [await IngestLedger.open(path) for _ in range(2)]
    try:

        async def replica(name: str, ledger: IngestLedger) -> dict[str, str | None]:
            got = {}
            for k in random.sample(KEYS, len(KEYS)):
                e = await ledger.claim("room:r", f"msg:{k}", message_id=k, author=name, text=k)
                got[k] = None if e is None else e.author
            return got

        a, b = await asyncio.gather(replica("a", ledgers[0]), replica("b", ledgers[1]))
        check_once({"a": a, "b": b})
    finally:
        for ledger in ledgers:
            await ledger.close()


async def test_a_nul_the_database_cannot_store_is_refused_by_name(pg_url: str) -> None:
    db = await Database.open(pg_url, max_size=1)
    try:
        ledger = await IngestLedger.open_database(db)
        with pytest.raises(InputError) as caught:
            await ledger.claim("room:r", "msg:x", message_id="x", author="a", text="a\x00b")
        assert caught.value.field == "text" and "NUL" in str(caught.value)
        assert await ledger.get("room:r", "msg:x") is None
    finally:
        await db.close()
