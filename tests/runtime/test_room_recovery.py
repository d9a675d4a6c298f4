"""A lost checkpoint or a log that lost events is refused, then rebuilt from the log.

Never a silent restart: before the fix a room whose checkpoint was gone ran its SOP again
from step 1 (two entries, two outcomes); a room whose log was emptied went on with no history.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

from framework import Event, EventKind, Staffroom
from framework.errors import StorageError
from framework.runtime.room import Room
from framework.sessions.keys import SessionKey


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def forget_checkpoint(room: Room) -> None:
    # What deleting checkpoints.sqlite (or restoring an older one) does to one room; under
    # the room's run lock, which on a database is its lease (the only way to write there).
    saver: Any = room._graph.checkpointer
    async with room._running():
        await saver.adelete_thread(room.key)


def kinds(room: Room) -> Counter[str]:
    return Counter(str(e.kind) for e in room.history())


async def test_lost_checkpoint_while_waiting_is_refused_then_rebuilt(staff: Staffroom) -> None:
    room = await staff.room("lost-1", "tech-article")
    await collect(room.start())
    assert (await room.status()).waiting
    before = len(room.history())
    await forget_checkpoint(room)

    with pytest.raises(StorageError) as refused:
        await collect(room.post("继续", author="author"))
    message = str(refused.value)
    assert "checkpoint is missing" in message and "staffroom doctor --repair" in message
    assert len(room.history()) == before, "nothing may be stored in a room that would restart"
    with pytest.raises(StorageError):
        await collect(room.start())

    report = await room.rebuild()
    assert report.resumed_at == "human" and report.problem and report.unrouted == []
    status = await room.status()
    assert status.waiting and status.step == 2 and status.turns == 2
    assert len(room.history()) == before, "a rebuild calls no model and writes nothing"

    await collect(room.post("方向没问题，继续", author="author"))
    counts = kinds(room)
    assert counts["outcome"] == 1 and counts["wait"] == 1
    plans = [e for e in room.history() if e.kind == EventKind.PLAN and e.meta.get("entry")]
    assert len(plans) == 1, "the room must not enter (and run its SOP) a second time"
    steps = [e.content["n"] for e in room.history() if e.kind == EventKind.SOP_STEP]
    assert steps == [1, 2, 3, 4]


async def test_lost_checkpoint_after_the_run_rebuilds_free_chat(staff: Staffroom) -> None:
    room = await staff.room("lost-2", "tech-article")
    await collect(room.start())
    await collect(room.post("方向没问题，继续", author="author"))
    await collect(room.post("@designer 图再简洁一点", author="author"))
    turns = (await room.status()).turns
    await forget_checkpoint(room)

    report = await room.rebuild()
    assert report.resumed_at == "end"
    status = await room.status()
    assert status.phase == "open" and not status.waiting and status.turns == turns

    got = await collect(room.post("@pm 收尾吧", author="author"))
    assert [e.author for e in got if e.kind == EventKind.MESSAGE] == ["author", "pm"]
    ids = [e.id for e in room.history()]
    assert len(ids) == len(set(ids))
    assert kinds(room)["outcome"] == 1


async def test_log_that_lost_its_events_is_reported(staff: Staffroom) -> None:
    room = await staff.room("lost-3", "tech-article")
    await collect(room.start())
    log = staff.sessions.log(SessionKey.parse(room.key))
    log.close()
    log.path.write_bytes(b"")  # emptied by hand (or restored from an old backup)

    with pytest.raises(StorageError) as refused:
        await collect(room.post("继续", author="author"))
    assert "lost events its checkpoint knows" in str(refused.value)

    report = await room.rebuild()
    assert report.resumed_at == "reset"
    got = await collect(room.start())
    assert got[0].kind == EventKind.PLAN and got[0].meta["entry"], "it enters afresh"


async def test_crash_between_entry_and_checkpoint_is_not_a_lost_checkpoint(
    staff: Staffroom,
) -> None:
    # The log's last line is the entry: a process died before the first checkpoint. That
    # room resumes by itself (same epoch), it is not refused.
    room = await staff.room("lost-4", "tech-article")
    await collect(room.start())
    entry = room.history()[0]
    await forget_checkpoint(room)
    log = staff.sessions.log(SessionKey.parse(room.key))
    log.close()
    log.path.write_text(entry.to_json() + "\n", encoding="utf-8")
    got = await collect(room.start())
    assert got[-1].kind == EventKind.WAIT
    entries = [e for e in room.history() if e.kind == EventKind.PLAN and e.meta.get("entry")]
    assert len(entries) == 1


async def test_dm_rebuilt_goes_on_without_reusing_reply_ids(staff: Staffroom) -> None:
    dm = await staff.dm("pm", "alice")
    await collect(dm.post("你好", author="alice"))
    await collect(dm.post("再说说提纲", author="alice"))
    await forget_checkpoint(dm)
    with pytest.raises(StorageError):
        await collect(dm.post("还在吗", author="alice"))

    report = await dm.rebuild()
    assert report.resumed_at == "end"
    got = await collect(dm.post("还在吗", author="alice"))
    replies = [e for e in got if e.kind == EventKind.MESSAGE and e.author == "pm"]
    assert len(replies) == 1, "the new reply must be stored, not skipped as an old id"
    assert len([e for e in dm.history() if e.author == "pm"]) == 3
