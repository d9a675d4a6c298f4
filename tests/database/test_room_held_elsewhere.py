"""A message whose room another replica holds for longer than a run waits for it goes back to
the shared queue and is answered once the room is free: accepted (202) means answered, even
when the room is busy elsewhere (a long model call, or a replica that hangs)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from projects import desk, project_with

from framework import EventKind, Settings, Staffroom
from framework.database.leases import Leases
from framework.database.pool import Database
from framework.serving import Gateway
from framework.sessions.events import Event

SCENARIO = desk(0.1)


async def test_a_message_waiting_past_another_replicas_hold_is_requeued_then_answered(
    tmp_path: Path, pg_url: str
) -> None:
    project = project_with(tmp_path / "project", {"desk": SCENARIO})
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=project,
        allow_network=False,
        database=pg_url,
        lease_seconds=1,
        run_lock_timeout=0.5,  # how long a run waits for the room before giving it back
    )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r1", "desk")
        await gateway.post(room.key, "@pm first", author="alice", message_id="m0")
        other = await Database.open(pg_url, max_size=1)  # another replica...
        try:
            held = await Leases(other, seconds=30).acquire(room.key)  # ...runs the room
            assert held is not None
            queued = await gateway.post(
                room.key, "@pm are you there?", author="alice", message_id="m1", wait=False
            )
            assert queued.status == "queued"
            # Slack's redelivery waits for the run: it gave the room up, the message is kept.
            redelivered = await gateway.post(
                room.key, "@pm are you there?", author="alice", message_id="m1"
            )
            assert redelivered.status == "queued" and redelivered.duplicate
            entry = await gateway.ledger.get(room.key, "msg:m1")
            assert entry is not None and entry.state == "queued", "dropped from the ledger"
            await Leases(other, seconds=30).release(held)  # the other replica is done
        finally:
            await other.close()
        deadline = time.monotonic() + 20
        while not _answered(room.history(), "m1"):
            assert time.monotonic() < deadline, "the requeued message was never answered"
            await asyncio.sleep(0.05)
        again = await gateway.post(room.key, "@pm are you there?", author="alice", message_id="m1")
        await gateway.close()
    assert again.status == "done" and again.duplicate
    said = [e.author for e in room.history() if e.kind == EventKind.MESSAGE]
    assert said == ["alice", "pm", "alice", "pm"], said


def _answered(history: list[Event], message_id: str) -> bool:
    """Whether the message ``message_id`` is stored and an employee spoke after it."""
    said = [e for e in history if e.kind == EventKind.MESSAGE]
    at = next((i for i, e in enumerate(said) if e.meta.get("client_id") == message_id), None)
    return at is not None and any(e.author == "pm" for e in said[at + 1 :])
