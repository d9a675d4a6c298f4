"""A message to a room that has entered costs two supersteps (two checkpoint writes), not five.

Rooms run with LangGraph's ``durability="sync"``: every superstep is a checkpoint written
before the next step runs (on PostgreSQL a fenced transaction). A free-chat message was five:
the input checkpoint, the START step, ``route``, the ``turn``, and ``route`` again to end. Now
the message goes straight to ``route`` (``graph.run_input``), and a turn after which ``route``
would change nothing ends the run itself (``graph.turn``). Where ``route`` has something to do
after a turn (the turn cap's outcome, the next mention), it still runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from framework import EventKind, Staffroom
from framework.runtime.room import Room
from framework.sessions.events import Event
from framework.specs.scenario import Scenario


async def _collect(stream: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in stream]


def _free_chat(staff: Staffroom, max_turns: int | None = None) -> Scenario:
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.announcement.sop = None  # free chat: no SOP steps
    if max_turns is not None:
        scenario.settings.max_turns = max_turns
    return scenario


async def _step(staff: Staffroom, room: Room) -> int:
    """The LangGraph step of the room's latest checkpoint (one per superstep, per room)."""
    saver = await staff.stores.checkpoints()
    found: Any = await saver.aget_tuple({"configurable": {"thread_id": room.key}})
    assert found is not None
    return int(found.metadata["step"])


def _replies(events: list[Event]) -> list[str]:
    return [e.author for e in events if e.kind == EventKind.MESSAGE and not e.from_person]


async def test_a_message_mentioning_one_employee_is_two_supersteps(staff: Staffroom) -> None:
    room = await staff.room("steps-1", _free_chat(staff))
    assert _replies(await _collect(room.post("@pm hello", author="author"))) == ["pm"]
    for n, who in enumerate(["engineer", "pm", "designer"]):
        before = await _step(staff, room)
        said = await _collect(room.post(f"@{who} question {n}", author="author"))
        assert _replies(said) == [who]
        assert await _step(staff, room) - before == 2  # route, turn (was 5)
    status = await room.status()
    assert status.phase == "open" and not status.waiting and status.turns == 4


async def test_two_mentions_still_route_between_the_turns(staff: Staffroom) -> None:
    room = await staff.room("steps-2", _free_chat(staff))
    await _collect(room.post("@pm hello", author="author"))
    before = await _step(staff, room)
    said = await _collect(room.post("@engineer @designer both of you", author="author"))
    assert _replies(said) == ["engineer", "designer"]
    assert await _step(staff, room) - before == 4  # route, turn, route, turn


async def test_the_turn_cap_still_ends_free_chat_with_its_outcome(staff: Staffroom) -> None:
    room = await staff.room("steps-3", _free_chat(staff, max_turns=1))
    await _collect(room.post("@pm hello", author="author"))
    said = await _collect(room.post("@engineer and again", author="author"))
    assert _replies(said) == ["engineer"]
    outcome = [e for e in said if e.kind == EventKind.OUTCOME]
    assert [e.content["reason"] for e in outcome] == ["max_turns"]
    assert (await room.status()).stop_reason == "max_turns"
