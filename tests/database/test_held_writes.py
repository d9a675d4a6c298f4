"""A run's pending writes go in the transaction of the step's checkpoint, and what a run
leaves held (a pause's) is written when it ends.

LangGraph saves a task's pending writes as the task ends and then the checkpoint of the step:
two fenced transactions a step. During a room's run the fenced checkpointer holds the writes
back and sends them with the next checkpoint (``FencedPostgresSaver.hold_writes``); a
free-chat message in an entered room (``route``, ``turn``) is then two transactions. And a
run reads its room's checkpoint several times (the room checks it and its pending writes,
LangGraph loads it): under the lease, the reads after the first are its copies until the
room is written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from paths import ROOT
from projects import project_with

from framework import EventKind, Settings, Staffroom
from framework.database.fenced_checkpoints import open_checkpoints
from framework.database.leases import Leases
from framework.database.pool import Database
from framework.sessions.events import Event

SCENARIO = """\
id: desk
title: Help desk
participants: [pm, engineer, designer]
humans: [alice]
announcement:
  text: Free chat with three employees.
settings:
  model: {provider: simulated, options: {delay: 0}}
"""

RECORD_TRANSACTIONS = """
CREATE TABLE test_writes (tx BIGINT NOT NULL, tab TEXT NOT NULL);
CREATE FUNCTION test_record() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO test_writes VALUES (txid_current(), TG_TABLE_NAME);
    RETURN NULL;
END $$;
CREATE TRIGGER test_record AFTER INSERT ON checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION test_record();
CREATE TRIGGER test_record AFTER INSERT ON checkpoint_writes
    FOR EACH STATEMENT EXECUTE FUNCTION test_record();
"""
"""Which transaction inserted into which checkpoint table (one row per statement)."""


async def _drain(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]


async def test_a_free_chat_message_is_two_checkpoint_transactions(
    tmp_path: Path, pg_url: str
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=project_with(tmp_path / "project", {"desk": SCENARIO}),
        allow_network=False,
        database=pg_url,
    )
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("r1", "desk")
        await _drain(room.post("@pm hello", author="alice"))
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute(RECORD_TRANSACTIONS)
            said = await _drain(room.post("@engineer a question", author="alice"))
            rows = db.execute("SELECT tx, tab FROM test_writes").fetchall()
    assert [e.author for e in said if e.kind == EventKind.MESSAGE] == ["alice", "engineer"]
    transactions = {tx for tx, _ in rows}
    assert len(transactions) == 2, rows  # route's step, the turn's step (was 5 + 4 writes)
    for tx in transactions:  # each: the step's pending writes with its checkpoint
        assert {tab for t, tab in rows if t == tx} == {"checkpoint_writes", "checkpoints"}


async def test_a_pause_is_written_when_its_run_ends(tmp_path: Path, pg_url: str) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", project_dir=ROOT, allow_network=False, database=pg_url
    )
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("launch-1", "tech-article")
        await _drain(room.start())  # the SOP's first step waits for the author
        assert (await room.status()).waiting
    # Read back by another process's checkpointer: the pause is stored, not only held.
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        found = await AsyncPostgresSaver(conn).aget_tuple({"configurable": {"thread_id": room.key}})
    assert found is not None and found.pending_writes
    assert "__interrupt__" in {channel for _, channel, _ in found.pending_writes}


async def test_a_second_read_under_the_lease_is_the_first_until_the_room_is_written(
    pg_url: str,
) -> None:
    db = await Database.open(pg_url, max_size=3)
    try:
        saver = await open_checkpoints(db)
        room: Any = {"configurable": {"thread_id": "room:r1", "checkpoint_ns": ""}}
        async with Leases(db, seconds=30).hold("room:r1", wait=0, fence=saver):
            first = _checkpoint("first")
            await saver.aput(room, first, {"step": 0}, {"note": 1})
            read = await saver.aget_tuple(room)
            assert read is not None and read.checkpoint["id"] == first["id"]
            read.checkpoint["channel_versions"]["note"] = 99  # as LangGraph's loop does
            # The second read: no round trip, and not the first reader's changed copy.
            async with db.connection() as conn:  # gone behind the saver's back
                await conn.execute("DELETE FROM checkpoints")
            again = await saver.aget_tuple(room)
            assert again is not None and again.checkpoint["channel_versions"]["note"] == 1
            again = await saver.aget_tuple(room)  # every read until the next write
            assert again is not None and again.checkpoint["id"] == first["id"]
            second = _checkpoint("second")
            await saver.aput(room, second, {"step": 1}, {"note": 2})
            assert (found := await saver.aget_tuple(room)) is not None
            await saver.aput(room, _checkpoint("third"), {"step": 2}, {"note": 3})
            found = await saver.aget_tuple(room)  # written since: read from the database
            assert found is not None and found.checkpoint["channel_values"]["note"] == "third"
    finally:
        await db.close()


def _checkpoint(note: str) -> Checkpoint:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": note}
    checkpoint["channel_versions"] = {"note": 1}
    return checkpoint
