"""Checkpoint retention: a thread keeps its latest checkpoint and its pending writes, no more.

What a room resumes from (``aget_tuple``: the latest checkpoint with its pending writes) must
read the same after a prune as before, on both savers; on PostgreSQL a prune needs the room's
lease, and the after-run prune never raises, whatever goes wrong. A run prunes its room only
when the room's steps crossed a multiple of ``PRUNE_EVERY_STEPS`` (a prune is a dozen round
trips: not paid after every run), so a room's history stays bounded.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from framework.database.fenced_checkpoints import open_checkpoints
from framework.database.leases import Leases
from framework.database.pool import Database
from framework.database.retention import (
    PRUNE_EVERY_STEPS,
    prune_after_run,
    prune_checkpoints,
    prune_if_due,
)

ROOM = "room:r1"


async def make_history(
    saver: BaseCheckpointSaver[Any], thread: str, steps: int, first: int = 0
) -> Any:
    """``steps`` checkpoints in a chain (LangGraph steps from ``first``), pending writes on
    the last; its config."""
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    for step in range(first, first + steps):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"draft": f"version {step}"}
        checkpoint["channel_versions"] = {"draft": step + 1}
        metadata: Any = {"step": step, "source": "loop"}
        config = await saver.aput(config, checkpoint, metadata, {"draft": step + 1})
        await saver.aput_writes(config, [("draft", f"pending after {step}")], f"task-{step}")
    return config


def resumed_from(found: CheckpointTuple | None) -> tuple[Any, ...]:
    assert found is not None
    return (
        found.config["configurable"]["checkpoint_id"],
        found.checkpoint["channel_values"],
        found.pending_writes,
    )


async def count(saver: BaseCheckpointSaver[Any], thread: str) -> int:
    return len([c async for c in saver.alist({"configurable": {"thread_id": thread}})])


@pytest.fixture
async def sqlite_saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with aiosqlite.connect(tmp_path / "checkpoints.sqlite") as conn:
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        yield saver


async def test_sqlite_keeps_what_a_room_resumes_from(
    sqlite_saver: AsyncSqliteSaver, tmp_path: Path
) -> None:
    latest = await make_history(sqlite_saver, ROOM, 5)
    await make_history(sqlite_saver, "room:other", 3)
    # Writes of a step whose checkpoint is not saved yet (a run saves them in the background).
    early: Any = {"configurable": {**latest["configurable"], "checkpoint_id": "9" * 32}}
    await sqlite_saver.aput_writes(early, [("draft", "not yet checkpointed")], "task-early")
    before = resumed_from(await sqlite_saver.aget_tuple({"configurable": {"thread_id": ROOM}}))

    report = await prune_checkpoints(sqlite_saver, [ROOM])

    assert report.removed == {ROOM: 4} and report.writes_removed == 4
    assert resumed_from(await sqlite_saver.aget_tuple(latest)) == before
    assert await count(sqlite_saver, ROOM) == 1
    assert await count(sqlite_saver, "room:other") == 3  # not named: left alone
    with sqlite3.connect(tmp_path / "checkpoints.sqlite") as raw:
        (kept,) = raw.execute("SELECT count(*) FROM writes WHERE task_id = 'task-early'").fetchone()
    assert kept == 1

    everything = await prune_checkpoints(sqlite_saver, None)
    assert everything.removed == {ROOM: 0, "room:other": 2}


async def test_after_a_run_sqlite_is_left_as_it_is(sqlite_saver: AsyncSqliteSaver) -> None:
    await make_history(sqlite_saver, ROOM, 3)
    await prune_after_run(sqlite_saver, ROOM)
    assert await count(sqlite_saver, ROOM) == 3  # opt-in there: `staffroom doctor --prune`


async def test_postgres_prunes_under_the_rooms_lease(pg_url: str) -> None:
    db = await Database.open(pg_url, max_size=3)
    try:
        saver = await open_checkpoints(db)
        leases = Leases(db, seconds=30)
        async with leases.hold(ROOM, wait=0, fence=saver):
            latest = await make_history(saver, ROOM, 4)
            before = resumed_from(await saver.aget_tuple({"configurable": {"thread_id": ROOM}}))
            await prune_after_run(saver, ROOM)  # what the run's lock does on its way out
            assert await count(saver, ROOM) == 1
            assert resumed_from(await saver.aget_tuple(latest)) == before
            await make_history(saver, ROOM, 2)
        # The doctor's way: no lease held here, so the prune takes it for the room.
        report = await prune_checkpoints(saver, None, leases=leases)
        assert report.removed == {ROOM: 2} and not report.skipped
    finally:
        await db.close()


async def test_postgres_prune_without_the_lease_skips_and_after_run_never_raises(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    runner = await Database.open(pg_url, max_size=2, owner="replica-a")
    doctor = await Database.open(pg_url, max_size=2, owner="replica-b")
    try:
        saver = await open_checkpoints(runner)
        async with Leases(runner, seconds=30).hold(ROOM, wait=0, fence=saver):
            await make_history(saver, ROOM, 3)
            other = await open_checkpoints(doctor)
            report = await prune_checkpoints(other, None, leases=Leases(doctor, seconds=30))
            assert report.removed == {}
            assert "replica replica-a is running it" in report.skipped[ROOM]
            assert (await prune_checkpoints(other, [ROOM])).skipped  # no leases given: skipped
            with caplog.at_level(logging.WARNING):
                await prune_after_run(other, ROOM)  # not its lease: refused, only logged
            assert "could not prune the checkpoints of room room:r1" in caplog.text
            assert await count(saver, ROOM) == 3
    finally:
        await runner.close()
        await doctor.close()


async def test_postgres_prune_keeps_exactly_the_blobs_the_latest_checkpoint_reads(
    pg_url: str,
) -> None:
    # Lists and dicts are stored as blobs, one row per channel and version; the prune drops
    # every version only older checkpoints used, across channels, in this room only.
    db = await Database.open(pg_url, max_size=3)
    try:
        saver = await open_checkpoints(db)
        config: Any = {"configurable": {"thread_id": ROOM, "checkpoint_ns": ""}}
        async with Leases(db, seconds=30).hold(ROOM, wait=0, fence=saver):
            for step in range(4):
                checkpoint = empty_checkpoint()
                plan = {"n": step // 2}  # a new version every other step
                checkpoint["channel_values"] = {"notes": [f"note {step}"], "plan": plan}
                checkpoint["channel_versions"] = {"notes": step + 1, "plan": step // 2 + 1}
                versions = {"notes": step + 1, "plan": step // 2 + 1}
                config = await saver.aput(config, checkpoint, {"step": step}, versions)
            async with db.connection() as conn:
                await conn.execute(
                    "INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, "
                    "type, blob) VALUES ('room:other', '', 'notes', '1', 'json', '[]')"
                )
            latest = await saver.aget_tuple({"configurable": {"thread_id": ROOM}})
            before = resumed_from(latest)
            await prune_after_run(saver, ROOM)
            assert resumed_from(await saver.aget_tuple(config)) == before
        assert latest is not None
        assert latest.checkpoint["channel_values"] == {"notes": ["note 3"], "plan": {"n": 1}}
        async with db.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT thread_id, channel, version FROM checkpoint_blobs "
                    "ORDER BY thread_id, channel"
                )
            ).fetchall()
        read = latest.checkpoint["channel_versions"]
        assert [(r["thread_id"], r["channel"], r["version"]) for r in rows] == [
            ("room:other", "notes", "1"),  # another room's: untouched
            (ROOM, "notes", str(read["notes"])),
            (ROOM, "plan", str(read["plan"])),
        ]
    finally:
        await db.close()


async def test_a_run_prunes_its_room_once_every_prune_every_steps(pg_url: str) -> None:
    every = PRUNE_EVERY_STEPS
    db = await Database.open(pg_url, max_size=3)
    try:
        saver = await open_checkpoints(db)
        async with Leases(db, seconds=30).hold(ROOM, wait=0, fence=saver):
            assert not await prune_if_due(saver, ROOM)  # nothing saved: nothing to prune
            await make_history(saver, ROOM, 3, first=-1)  # a new room's first run
            assert await prune_if_due(saver, ROOM) and await count(saver, ROOM) == 1
            step, runs = 2, 0
            while step + 2 < every:  # runs of two steps that cross no multiple of `every`
                await make_history(saver, ROOM, 2, first=step)
                step, runs = step + 2, runs + 1
                assert not await prune_if_due(saver, ROOM)
            assert await count(saver, ROOM) == 1 + 2 * runs  # kept until the next crossing
            await make_history(saver, ROOM, 3, first=step)  # this run crosses `every`
            assert await prune_if_due(saver, ROOM) and await count(saver, ROOM) == 1
    finally:
        await db.close()
