"""``staffroom doctor`` on a data folder whose rooms' checkpoints live in PostgreSQL.

The check finds a room whose checkpoint was lost, as it does with ``checkpoints.sqlite``.
``--repair`` rebuilds it under the room's lease, as any run writes it: while another replica
holds that lease the room is left alone, with the replica named and the way out; once the
lease is free the doctor takes it (a new epoch), the fenced checkpointer accepts the rebuilt
checkpoint, the replica that held the room before is fenced off, and the room goes on from
where it waited.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from cli_in_process import Cli, CliResult
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from paths import ROOT

from framework.database.fenced_checkpoints import FencedPostgresSaver
from framework.database.leases import Lease, Leases
from framework.database.pool import Database
from framework.errors import LeaseLostError

SCRIPT = ROOT / "scenarios" / "tech_article.script.txt"
ROOM = "room:r1"


def on(cli: Cli, url: str, data: Path, *args: str) -> CliResult:
    """``staffroom ARGS --database URL`` on the data folder ``data``."""
    return cli(*args, "--database", url, data=data)


def waiting_room(cli: Cli, url: str, data: Path) -> None:
    waiting = on(cli, url, data, "run", "tech-article", "--room", "r1")
    assert waiting.code == 0 and "waiting for author" in waiting.out, waiting.err


async def lose_checkpoint(url: str) -> None:
    """The room's checkpoints are gone (a restore that missed them, a careless DELETE)."""
    db = await Database.open(url, max_size=1)
    try:
        await AsyncPostgresSaver(db.pool).adelete_thread(ROOM)
    finally:
        await db.close()


async def take_lease(url: str, owner: str) -> Lease:
    """Another replica (its own pool and owner id) takes the room's lease for a minute."""
    db = await Database.open(url, max_size=1, owner=owner)
    try:
        lease = await Leases(db, seconds=60).acquire(ROOM)
    finally:
        await db.close()
    assert lease is not None
    return lease


async def release(url: str, lease: Lease) -> None:
    db = await Database.open(url, max_size=1, owner=lease.owner)
    try:
        await Leases(db, seconds=60).release(lease)
    finally:
        await db.close()


async def lease_row(url: str) -> tuple[str, int, bool]:
    """The room's lease row, live or not: owner, epoch, whether it is live."""
    db = await Database.open(url, max_size=1)
    try:
        async with db.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT owner, epoch, expires_at > now() AS live FROM staffroom_leases "
                    "WHERE session = %s",
                    (ROOM,),
                )
            ).fetchone()
    finally:
        await db.close()
    assert row is not None
    return str(row["owner"]), int(row["epoch"]), bool(row["live"])


async def stale_write(url: str, lease: Lease) -> LeaseLostError | None:
    """The replica that held ``lease`` writes the room's checkpoints (it deletes them): the
    error that refused it, or None when it got through."""
    db = await Database.open(url, max_size=1, owner=lease.owner)
    try:
        saver = FencedPostgresSaver(db.pool)
        saver.fence(ROOM, lease)
        try:
            await saver.adelete_thread(ROOM)
        except LeaseLostError as exc:
            return exc
        return None
    finally:
        await db.close()


def last_mark(data: Path) -> int:
    """The epoch of the last lease marker in the room's log (the latest holder's)."""
    lines = (data / "sessions" / f"{ROOM}.jsonl").read_text("utf-8").splitlines()
    marks = [json.loads(line) for line in lines if '"mark"' in line]
    return int(marks[-1]["epoch"])


def test_doctor_finds_a_lost_checkpoint_on_the_database(
    cli: Cli, tmp_path: Path, pg_url: str
) -> None:
    data = tmp_path / "data"
    waiting_room(cli, pg_url, data)

    sound = on(cli, pg_url, data, "doctor")
    assert sound.code == 0, sound.out + sound.err
    assert "1 rooms" in sound.out and sound.out.rstrip().endswith("no problems found")
    assert not (data / "checkpoints.sqlite").exists(), "the check writes no SQLite store"

    asyncio.run(lose_checkpoint(pg_url))
    broken = on(cli, pg_url, data, "doctor")
    assert broken.code == 1, broken.out + broken.err
    assert f"problem: {ROOM}:" in broken.out and "(--repair: rebuild)" in broken.out


def test_repair_rebuilds_under_the_rooms_lease_never_under_anothers(
    cli: Cli, tmp_path: Path, pg_url: str
) -> None:
    data = tmp_path / "data"
    waiting_room(cli, pg_url, data)
    asyncio.run(lose_checkpoint(pg_url))
    theirs = asyncio.run(take_lease(pg_url, "replica-b"))

    refused = on(cli, pg_url, data, "doctor", "--repair")
    assert refused.code == 1, refused.out + refused.err
    said = " ".join(refused.out.split())  # the console wraps long lines
    assert f"{ROOM}: not rebuilt: replica replica-b holds the room's lease" in said
    assert "Stop that replica, or wait until it is done with the room" in said
    assert re.search(
        r"lease ends at \S+ \S+ UTC unless it renews it\), then run staffroom doctor", said
    )
    assert "--repair again" in said
    assert said.endswith("(--repair: rebuild)"), "nothing written: the room is still broken"
    assert asyncio.run(lease_row(pg_url)) == ("replica-b", theirs.epoch, True)

    asyncio.run(release(pg_url, theirs))
    fixed = on(cli, pg_url, data, "doctor", "--repair")
    assert fixed.code == 0, fixed.out + fixed.err
    assert f"{ROOM}: rebuilt from its log, waiting for people again" in fixed.out
    assert fixed.out.rstrip().endswith("no problems found")

    owner, epoch, live = asyncio.run(lease_row(pg_url))
    assert owner.startswith("doctor:") and epoch == theirs.epoch + 1
    assert not live, "the doctor gives the lease back when the room is rebuilt"
    assert last_mark(data) == epoch, "the log marks the doctor's takeover"

    # The replica that held the room before is fenced off: its write is refused, and the
    # rebuilt checkpoint stays.
    refusal = asyncio.run(stale_write(pg_url, theirs))
    assert refusal is not None and "lost its lease" in str(refusal)
    assert on(cli, pg_url, data, "doctor").code == 0

    done = on(cli, pg_url, data, "run", "tech-article", "--room", "r1", "--script", str(SCRIPT))
    assert done.code == 0, done.err
    assert "ended: sop_complete" in done.out and "step 1" not in done.out
