"""A run cut after its message was stored but before the checkpoint of the step that routed
it was written: the room's next message gets its own reply, and the cut message, run again,
is answered once.

What the replicas benchmark found with a 15-second PostgreSQL restart under load (and what a
kill -9 at the wrong moment does too): LangGraph saves a step's checkpoint in the background
while the next step runs, so a turn appended its reply while the write that routed the
message was still waiting for the database. That write lost, the room's next message took
the same turn number, its reply was taken for the logged one (same event id) and skipped,
and the cut message, run again, was answered a second time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest
from projects import project_with

from framework import EventKind, Settings, Staffroom
from framework.runtime.room import Room
from framework.sessions.events import Event

SCENARIO = """\
id: desk
title: Help desk
participants: [pm, engineer, designer]
humans: [alice]
announcement:
  text: Free chat with three employees.
settings:
  model: {provider: simulated, options: {delay: 0.3}}
"""


def _project(tmp_path: Path) -> Path:
    project = project_with(tmp_path / "project", {"desk": SCENARIO})
    return project


def _replies(history: list[Event]) -> list[str]:
    """The authors of the employees' messages, in order."""
    return [e.author for e in history if e.kind == EventKind.MESSAGE and not e.from_person]


async def _drain(stream: AsyncIterator[Event]) -> None:
    async for _ in stream:
        pass


HOLD_KEY = 4242
HOLD_CHECKPOINTS = f"""
CREATE TABLE test_outage (down BOOLEAN NOT NULL);
INSERT INTO test_outage VALUES (false);
CREATE FUNCTION test_hold_checkpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared({HOLD_KEY});
    IF (SELECT down FROM test_outage) THEN
        RAISE EXCEPTION 'the database went away' USING ERRCODE = '08006';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER test_hold BEFORE INSERT ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION test_hold_checkpoints();
CREATE TRIGGER test_hold BEFORE INSERT ON checkpoint_writes
    FOR EACH ROW EXECUTE FUNCTION test_hold_checkpoints();
"""
"""A slow database, then a lost one: while the test holds the advisory lock every checkpoint
write waits; once ``test_outage.down`` is set, each one fails as a dropped connection does."""


async def test_a_run_cut_before_its_checkpoint_is_not_answered_twice(
    tmp_path: Path, pg_url: str
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=_project(tmp_path),
        allow_network=False,
        database=pg_url,
        lease_seconds=30,
    )
    async with await Staffroom.open(settings=settings) as staff:
        room: Room = await staff.room("r1", "desk")
        await _drain(room.start())
        await _drain(room.post("@engineer first", author="alice", client_id="m0"))
        with psycopg.connect(pg_url, autocommit=True) as db:
            db.execute(HOLD_CHECKPOINTS)
            db.execute("SELECT pg_advisory_lock(%s)", (HOLD_KEY,))
            cut = asyncio.create_task(
                _drain(room.post("@pm second", author="alice", client_id="m1"))
            )
            # pm's model call takes 0.3 s: 3 s is time enough for pm to reply, if the run
            # may go on while its checkpoint is not written (LangGraph's default did).
            deadline = time.monotonic() + 3
            while "pm" not in _replies(room.history()) and time.monotonic() < deadline:
                assert not cut.done(), cut
                await asyncio.sleep(0.02)
            assert any(e.meta.get("client_id") == "m1" for e in room.history()), "stored"
            db.execute("UPDATE test_outage SET down = true")
            db.execute("SELECT pg_advisory_unlock(%s)", (HOLD_KEY,))
            with pytest.raises(psycopg.OperationalError):
                await asyncio.wait_for(cut, timeout=20)
            db.execute("UPDATE test_outage SET down = false")
        # The room goes on: a new message, then the cut one delivered again (the gateway
        # requeues it; its adopter may well run it after the new one).
        await _drain(room.post("@designer third", author="alice", client_id="m2"))
        await _drain(room.post("@pm second", author="alice", client_id="m1"))
    # Each message mentions one employee, who answers it once (m1 may come after m2: it
    # was cut, and ran again after it).
    said = _replies(room.history())
    assert sorted(said) == ["designer", "engineer", "pm"], said
