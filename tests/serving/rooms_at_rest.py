"""Rooms the gateway tests start from: opened through a gateway that is then closed, so the
room's entry is written and nothing of it runs, as a stopped (or restarted) server leaves it.

Not in conftest.py: a conftest's functions are not for importing (tests/server/server_harness.py
says why)."""

from __future__ import annotations

from framework import Settings, Staffroom
from framework.runtime.room import Room
from framework.serving import Gateway


async def reopened(staff: Staffroom, room_id: str, scenario: str) -> tuple[Gateway, Room]:
    """``room_id`` opened on ``scenario`` by one gateway, closed once its entry is written,
    and a new gateway on ``staff``: what a server restarted between messages serves."""
    gateway = await Gateway.open(staff)
    room = await gateway.open_room(room_id, scenario)
    await gateway.close()
    return await Gateway.open(staff), room


async def opened(settings: Settings, room_id: str, scenario: str) -> str:
    """``room_id`` opened on ``scenario`` by a Staffroom and gateway of its own, both closed
    again (its entry written, as a server that stopped leaves it); the room's key."""
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room(room_id, scenario)
        await gateway.close()
    return room.key
