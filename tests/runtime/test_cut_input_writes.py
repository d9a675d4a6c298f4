"""A run killed right after LangGraph saved its input, before the first step's checkpoint.

A message to a room that has entered (or a room waiting for people) is handed to LangGraph as
a ``Command``: its writes are saved as the checkpoint's pending writes before any step runs. A
kill (SIGKILL, power loss) there leaves those writes on the checkpoint with no step to run,
and the state shows no ``next`` task. The next message must not land on top of them (LangGraph
refused it: "At key 'inbox': Can receive only one value per step"); the cut run is finished
first, so the earlier message is answered once, then the new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from langgraph._internal._constants import NULL_TASK_ID
from langgraph.pregel._io import map_command

from framework import EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.runtime.graph import run_input
from framework.runtime.room import Room
from framework.sessions.events import Event, make_event
from framework.specs.model_spec import ModelSpec
from framework.specs.scenario import Scenario


async def _collect(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]


def _free_chat(staff: Staffroom) -> Scenario:
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.announcement.sop = None
    return scenario


async def _cut_post(staff: Staffroom, room: Room, text: str, mid: str) -> None:
    """What a process killed mid-post leaves: the message in the log, and the run's input
    saved as pending writes on the latest checkpoint (as LangGraph saves a Command's)."""
    log = room._deps.log
    event = make_event(room.key, EventKind.MESSAGE, "author", text, id=mid, meta={"human": True})
    assert log.append(event)
    log.sync()
    snap = await room._graph.aget_state(room._config)
    message = {"id": mid, "author": "author", "content": text}
    command = run_input(snap.values, bool(snap.interrupts), message)  # type: ignore[arg-type]
    saver: Any = await staff.stores.checkpoints()
    writes = [(channel, value) for _, channel, value in map_command(command)]
    async with room._running():  # on a database, a write needs the room's lease
        await saver.aput_writes(snap.config, writes, NULL_TASK_ID)


def _answered(events: list[Event]) -> list[str]:
    return [e.author for e in events if e.kind == EventKind.MESSAGE and not e.from_person]


async def test_a_cut_message_is_answered_before_the_next_one(staff: Staffroom) -> None:
    room = await staff.room("cut-input-1", _free_chat(staff))
    await _collect(room.post("@pm hello", author="author"))
    await _cut_post(staff, room, "@designer first", "cut-1")

    said = await _collect(room.post("@engineer second", author="author"))

    assert _answered(said) == ["designer", "engineer"]
    events = room.history()
    ids = [e.id for e in events]
    assert len(ids) == len(set(ids))
    humans = [e.content for e in events if e.kind == EventKind.MESSAGE and e.from_person]
    assert humans == ["@pm hello", "@designer first", "@engineer second"]
    assert not (await room.status()).waiting


async def test_a_cut_message_is_finished_when_the_room_starts_again(staff: Staffroom) -> None:
    room = await staff.room("cut-input-2", _free_chat(staff))
    await _collect(room.post("@pm hello", author="author"))
    await _cut_post(staff, room, "@designer first", "cut-2")

    said = await _collect(room.start())

    assert _answered(said) == ["designer"]
    again = await _collect(room.post("@engineer second", author="author"))
    assert _answered(again) == ["engineer"]


async def test_a_cut_answer_to_a_waiting_room_is_not_replaced_by_the_next(
    staff: Staffroom,
) -> None:
    room = await staff.room("cut-input-3", "tech-article")
    await _collect(room.start())
    assert (await room.status()).waiting  # the SOP waits for the author
    await _cut_post(staff, room, "方向没问题，继续", "cut-3")

    said = await _collect(room.post("@pm 再补一句", author="author"))

    # The cut answer resumes the SOP (it was silently replaced by the next message before).
    outcome = [e for e in said if e.kind == EventKind.OUTCOME]
    assert [e.content["reason"] for e in outcome] == ["sop_complete"]
    snap = await room._graph.aget_state(room._config)
    assert "cut-3" in snap.values["consumed"]
    assert snap.values["consumed"][-1] != "cut-3"  # the next message was routed after it


async def test_a_cut_answer_posted_again_does_not_answer_the_next_pause(staff: Staffroom) -> None:
    # An SOP that also waits for the author after step 1.
    v1 = await staff.sops.store.get("tech-article", 1)
    steps = (replace(v1.steps[0], waits_for_input=True), *v1.steps[1:])
    await staff.sops.store.add_version(replace(v1, version=2, steps=steps, change_log=()))
    await staff.sops.store.publish("tech-article", 2)
    await staff.sops.store.deprecate("tech-article", 1, "test: two pauses")
    room = await staff.room("cut-input-4", "tech-article")
    await _collect(room.start())
    assert (await room.status()).step == 1
    await _cut_post(staff, room, "方向没问题", "cut-4")

    # A script replays its line under the same id: the cut run answers it, and only it.
    await _collect(room.post("方向没问题", author="author", message_id="cut-4"))

    status = await room.status()
    assert status.waiting and status.step == 2  # at the next pause, not run past it


async def test_a_retry_finishes_a_cut_answer_first(settings: Settings) -> None:
    model = ScriptedChatModel(replies=[TimeoutError("slow"), "提纲如下", "好", "行", "收到"])

    def pm_scripted(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    settings = settings.model_copy(update={"model_retries": 0})
    async with await Staffroom.open(settings=settings, model_factory=pm_scripted) as staff:
        room = await staff.room("cut-input-5", "tech-article")
        await _collect(room.start())
        assert (await room.status()).wait_reason == "model_error"
        await _cut_post(staff, room, "@designer 也看看", "cut-5")

        await _collect(room.retry())

        snap = await room._graph.aget_state(room._config)
        assert "cut-5" in snap.values["consumed"]  # routed, not replaced by the retry
