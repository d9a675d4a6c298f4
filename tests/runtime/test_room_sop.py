"""A Room follows its scenario's SOP on the offline simulator, through the public API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from framework import Event, EventKind, Settings, Staffroom


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def spoken(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human")]


async def test_sample_scenario_runs_its_sop_to_the_end(
    staff: Staffroom, settings: Settings
) -> None:
    room = await staff.room("launch-1", "tech-article")
    first = await collect(room.start())

    entry = first[0]
    assert entry.kind == EventKind.PLAN and entry.meta["entry"]
    assert entry.content["sop"] == "tech-article@1"
    assert "1." in entry.content["announcement"]  # the sop slot was filled with the steps

    status = await room.status()
    assert status.waiting and status.waiting_for == ["author"]
    assert first[-1].kind == EventKind.WAIT

    rest = await collect(room.post("方向没问题，继续", author="author"))
    assert rest[0].kind == EventKind.MESSAGE and rest[0].author == "author"
    assert rest[-1].kind == EventKind.OUTCOME and rest[-1].content["reason"] == "sop_complete"

    history = room.history()
    replies = spoken(history)
    steps = next(e for e in history if e.meta.get("entry")).meta["steps"]  # taken at entry
    assert [e.author for e in replies] == [s["speakers"][0] for s in steps]
    for reply, step in zip(replies, steps, strict=True):
        assert reply.meta["why"] == "sop_step"
        assert reply.meta["step"] == step["n"]
        assert reply.meta["sop"] == "tech-article@1"
        assert reply.meta["model"] == "simulated"
        assert reply.text.startswith("[simulated]")

    # Everything a user would look for is on disk.
    data = settings.data_dir
    assert (data / "sessions" / "room:launch-1.jsonl").exists()
    assert (data / "checkpoints.sqlite").exists() or settings.database
    written = sorted(p.name for p in (data / "workspaces" / "room:launch-1").iterdir())
    assert written, "the simulator's write_file calls should leave files in the shared workspace"
    assert len({e.id for e in history}) == len(history)


async def test_tool_calls_are_logged_with_text_offsets(staff: Staffroom) -> None:
    room = await staff.room("launch-2", "tech-article")
    events = await collect(room.start())
    calls = [e for e in events if e.kind == EventKind.TOOL_CALL]
    results = [e for e in events if e.kind == EventKind.TOOL_RESULT]
    assert calls and calls[0].content["name"] == "write_file"
    assert results[0].content["ok"] is True
    message = spoken(events)[0]
    assert message.text_offsets == [len(message.text.split("\n")[0])]


async def test_mentions_during_the_sop_are_served_after_it(staff: Staffroom) -> None:
    room = await staff.room("launch-3", "tech-article")
    await collect(room.start())
    await collect(room.post("可以。另外 @designer 最后帮忙看一下封面", author="author"))
    replies = spoken(room.history())
    assert replies[-1].author == "designer"
    assert replies[-1].meta["why"] == "mention"
    assert [e.kind for e in room.history()][-1] == EventKind.OUTCOME


async def test_open_chat_after_the_sop_uses_mentions_then_the_selector(staff: Staffroom) -> None:
    room = await staff.room("launch-4", "tech-article")
    await collect(room.start())
    await collect(room.post("继续", author="author"))

    by_mention = spoken(await collect(room.post("@engineer 再补一句性能数据", author="author")))
    assert [(e.author, e.meta["why"]) for e in by_mention] == [("engineer", "mention")]

    by_selector = spoken(await collect(room.post("大家还有补充吗？", author="author")))
    assert len(by_selector) == 1 and by_selector[0].meta["why"] == "selector"
    assert by_selector[0].author == "designer"  # round robin: the one after engineer


async def test_stop_word_ends_the_run(staff: Staffroom) -> None:
    room = await staff.room("launch-5", "tech-article")
    await collect(room.start())
    events = await collect(room.post("/stop", author="author"))
    assert events[-1].kind == EventKind.OUTCOME
    assert events[-1].content["reason"] == "stop_word"
    assert not spoken(events)
    assert (await room.status()).stop_reason == "stop_word"


async def test_max_turns_stops_a_room(staff: Staffroom, tmp_path: Path) -> None:
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.settings.max_turns = 1
    room = await staff.room("launch-6", scenario)
    events = await collect(room.start())
    assert len(spoken(events)) == 1
    assert events[-1].content["reason"] == "max_turns"


async def test_redelivered_message_is_not_answered_twice(staff: Staffroom) -> None:
    room = await staff.room("launch-7", "tech-article")
    await collect(room.start())
    once = await collect(room.post("继续", author="author", message_id="platform-msg-1"))
    again = await collect(room.post("继续", author="author", message_id="platform-msg-1"))
    assert once and not again
    assert sum(1 for e in room.history() if e.id == "platform-msg-1") == 1


async def test_several_rooms_run_concurrently_in_one_process(staff: Staffroom) -> None:
    rooms = [await staff.room(f"parallel-{i}", "tech-article") for i in range(3)]
    results = await asyncio.gather(*(collect(r.start()) for r in rooms))
    for room, events in zip(rooms, results, strict=True):
        assert all(e.session == room.key for e in events)
        assert (await room.status()).waiting


async def test_dm_replies_one_to_one(staff: Staffroom) -> None:
    dm = await staff.dm("pm", "alice")
    assert dm.key == "dm:alice@pm"
    events = await collect(dm.post("Can you outline a launch plan?", author="alice"))
    replies = spoken(events)
    assert len(replies) == 1 and replies[0].author == "pm"
    assert "From the product side" in replies[0].text  # English in, English out
    other = await staff.dm("pm", "bob")
    assert other.history() == []
