"""Exactly once under contention: schedulers racing for the same fires each get a disjoint
share and together all of them, first as new claims, then as takeovers of claims that ran
out. On ``schedules.sqlite`` the racers are real OS processes on one data folder; on the
database, tasks on pools of their own (as replicas would be)."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from paths import ROOT

from framework.database.pool import Database
from framework.schedules.fire_store import FireStore, open_fire_store

FIRES = 500
T0 = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
LEASE = 60.0
LATER = T0 + timedelta(seconds=LEASE + 1)
"""Every claim of the first round has run out by then."""

# One scheduler process: open the ledger, say so, wait for the start line, claim every fire
# at the time given (each racer in an order of its own: in one order, the one that starts
# first stays ahead and wins every fire, so the others never meet it on a free one), print
# what it won. Real schedulers claim a few fires a tick, not 500 back to back.
_RACER = """
import asyncio, json, random, sys
from datetime import datetime
from pathlib import Path
from framework.schedules.fire_store import open_fire_store

async def main(data_dir, owner, now, count):
    store = await open_fire_store(Path(data_dir), None)
    print("ready", flush=True)
    sys.stdin.readline()
    order = list(range(count))
    random.Random(owner).shuffle(order)
    won = []
    for i in order:
        due = datetime.fromisoformat("2026-03-02T08:30:00+00:00")
        fire = await store.claim(f"s@{i}", "s", due, "due", owner,
                                 now=datetime.fromisoformat(now), lease_s=60)
        if fire is not None:
            won.append([fire.fire_id, fire.attempts])
        # A breath between claims: SQLite's busy handler is not fair, and a writer that
        # never pauses can finish the whole race while the other sleeps in its back-off.
        await asyncio.sleep(0.001)
    await store.close()
    print(json.dumps(won), flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


async def race_processes(data_dir: Path, now: datetime, owners: list[str]) -> dict[str, list]:
    """Each owner a process claiming every fire at ``now``, all released at once."""
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _RACER,
            str(data_dir),
            owner,
            now.isoformat(),
            str(FIRES),
            cwd=ROOT,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for owner in owners
    ]
    for proc in procs:  # every ledger open before any claim: they race from the first one
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if line != b"ready\n":
            _, err = await proc.communicate()
            pytest.fail(f"a racer did not start: {line!r} {err.decode()}")
    outputs = await asyncio.gather(
        *(asyncio.wait_for(proc.communicate(b"go\n"), 120) for proc in procs)
    )
    won = {}
    for owner, proc, (out, err) in zip(owners, procs, outputs, strict=True):
        assert proc.returncode == 0, err.decode()
        won[owner] = json.loads(out)
    return won


def each_once(won: dict[str, list], attempts: int) -> None:
    """Every fire won by exactly one racer, on its ``attempts``-th claim."""
    counts = Counter(fire_id for share in won.values() for fire_id, _ in share)
    assert len(counts) == FIRES, f"lost: {FIRES - len(counts)}"
    assert [f for f, n in counts.items() if n > 1] == [], "claimed twice"
    assert {n for share in won.values() for _, n in share} == {attempts}


async def owners_in(store: FireStore) -> Counter[str]:
    return Counter(f.owner for f in await store.history("s", limit=FIRES * 2))


@pytest.mark.sqlite_only
async def test_two_processes_on_one_folder_claim_each_fire_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    store = await open_fire_store(data, None)  # the tables exist before the race
    first = await race_processes(data, T0, ["p1", "p2"])
    each_once(first, attempts=1)
    # Both died holding their claims; two new schedulers take them over once they ran out.
    second = await race_processes(data, LATER, ["p3", "p4"])
    each_once(second, attempts=2)
    owners = await owners_in(store)
    await store.close()
    assert owners == Counter({o: len(share) for o, share in second.items() if share})
    assert all(first.values()) and all(second.values()), "each racer won some: they met"


async def race_tasks(url: str, now: datetime, owners: list[str]) -> dict[str, list]:
    """Each owner a task on a pool of its own claiming every fire at ``now``, at once."""
    pools = [await Database.open(url, max_size=2) for _ in owners]
    stores = [await open_fire_store(Path("unused"), db) for db in pools]
    go = asyncio.Event()

    async def racer(store: FireStore, owner: str) -> list:
        order = list(range(FIRES))
        random.Random(owner).shuffle(order)
        await go.wait()
        won = []
        for i in order:
            fire = await store.claim(f"s@{i}", "s", T0, "due", owner, now=now, lease_s=LEASE)
            if fire is not None:
                won.append([fire.fire_id, fire.attempts])
        return won

    tasks = [asyncio.create_task(racer(s, o)) for s, o in zip(stores, owners, strict=True)]
    go.set()
    try:
        shares = await asyncio.wait_for(asyncio.gather(*tasks), 120)
    finally:
        for db in pools:
            await db.close()
    return dict(zip(owners, shares, strict=True))


@pytest.mark.pg
async def test_replicas_on_one_database_claim_each_fire_once(pg_url: str) -> None:
    first = await race_tasks(pg_url, T0, ["r1", "r2", "r3", "r4"])
    each_once(first, attempts=1)
    second = await race_tasks(pg_url, LATER, ["r5", "r6", "r7"])
    each_once(second, attempts=2)
    db = await Database.open(pg_url, max_size=1)
    try:
        owners = await owners_in(await open_fire_store(Path("unused"), db))
    finally:
        await db.close()
    assert owners == Counter({o: len(share) for o, share in second.items() if share})
    assert sum(map(bool, first.values())) > 1 and sum(map(bool, second.values())) > 1, (
        "more than one racer won some: they met"
    )
