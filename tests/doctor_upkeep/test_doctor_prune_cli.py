"""``staffroom doctor`` shows how big the checkpoint store is, and ``--prune`` shrinks it.

A room keeps a checkpoint per step (langgraph #8531: they pile up for ever). After a prune
each room has only its latest one, and a room waiting for people still resumes where it
stood, doing nothing twice. The same on PostgreSQL, where the doctor also lists which
replica holds which room, and leaves a room another replica runs alone, saying so.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from cli_in_process import Cli
from paths import ROOT

from framework.database.leases import LEASE_MIGRATIONS, Leases
from framework.database.migrations import apply_migrations
from framework.database.pool import Database

SCRIPT = ROOT / "scenarios" / "tech_article.script.txt"


def checkpoints_shown(out: str) -> list[int]:
    """Every "N checkpoint(s)" total the doctor printed, in order."""
    return [int(n) for n in re.findall(r"checkpoints in .*: (\d+) checkpoint\(s\)", out)]


def test_prune_leaves_one_checkpoint_and_the_room_resumes(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    waiting = cli("run", "tech-article", "--room", "r1", data=data)
    assert waiting.code == 0 and "waiting for author" in waiting.out, waiting.err

    looked = cli("doctor", data=data)
    assert looked.code == 0, looked.out + looked.err
    [before] = checkpoints_shown(looked.out)
    assert before > 1

    pruned = cli("doctor", "--prune", data=data)
    assert pruned.code == 0, pruned.out + pruned.err
    assert f"room:r1: {before - 1} checkpoint(s) removed" in pruned.out
    assert checkpoints_shown(pruned.out) == [before, 1]  # the sizes before and after

    done = cli("run", "tech-article", "--room", "r1", "--script", str(SCRIPT), data=data)
    assert done.code == 0, done.err
    assert "ended: sop_complete" in done.out
    assert "step 1" not in done.out  # it went on from where it waited: nothing ran twice
    assert cli("doctor", data=data).out.rstrip().count("no problems found") == 1


def test_sqlite_prune_shrinks_the_file(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    embedded = {"STAFFROOM_DATABASE_URL": ""}  # the file, whichever backend the tests run on
    for room in ("a", "b"):
        args = ("run", "tech-article", "--room", room, "--script", str(SCRIPT))
        ran = cli(*args, data=data, env=embedded)
        assert ran.code == 0, ran.err
    file = data / "checkpoints.sqlite"
    size = file.stat().st_size
    pruned = cli("doctor", "--prune", data=data, env=embedded)
    assert pruned.code == 0, pruned.out + pruned.err
    assert checkpoints_shown(pruned.out)[-1] == 2  # one per room
    assert file.stat().st_size < size / 2  # VACUUMed: the freed pages left the file


def test_on_postgres_prune_and_the_leases_table(cli: Cli, tmp_path: Path, pg_url: str) -> None:
    data = tmp_path / "data"
    for room in ("r1", "r2"):
        waiting = cli("run", "tech-article", "--room", room, "--database", pg_url, data=data)
        assert waiting.code == 0 and "waiting for author" in waiting.out, waiting.err
    asyncio.run(hold_elsewhere(pg_url, "room:r2", owner="replica-b"))

    looked = cli("doctor", "--database", pg_url, data=data)
    assert looked.code == 0, looked.out + looked.err
    assert not (data / "checkpoints.sqlite").exists()  # and not reported missing
    for table in ("checkpoint_blobs", "checkpoint_writes", "staffroom_leases"):
        assert table in looked.out
    assert "rooms held by a replica now: 1" in looked.out
    assert re.search(r"room:r2\s+replica-b\s+\d+\s+\d+ s", looked.out), looked.out
    [before] = checkpoints_shown(looked.out)

    pruned = cli("doctor", "--prune", "--database", pg_url, data=data)
    assert pruned.code == 0, pruned.out + pruned.err
    assert "room:r1:" in pruned.out and "checkpoint(s) removed" in pruned.out
    assert "room:r2: skipped: replica replica-b is running it" in pruned.out
    after = checkpoints_shown(pruned.out)[-1]
    per_room = before // 2  # both rooms ran the same steps
    assert after == 1 + per_room  # r1 keeps its latest, r2 (held elsewhere) all of its own

    done = cli(
        "run",
        "tech-article",
        "--room",
        "r1",
        "--script",
        str(SCRIPT),
        "--database",
        pg_url,
        data=data,
    )
    assert done.code == 0, done.err
    assert "ended: sop_complete" in done.out and "step 1" not in done.out


async def hold_elsewhere(url: str, session: str, owner: str) -> None:
    """Another replica (its own pool and owner id) takes ``session``'s lease for a minute."""
    db = await Database.open(url, max_size=1, owner=owner)
    try:
        await apply_migrations(db, LEASE_MIGRATIONS)
        assert await Leases(db, seconds=60).acquire(session) is not None
    finally:
        await db.close()
