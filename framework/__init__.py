"""Staffroom: digital employees in DMs and group Rooms, with memory and versioned SOPs.

Public API::

    from framework import Staffroom
    staff = await Staffroom.open(".staffroom")
    room = await staff.room("launch-42", "tech-article")
    async for event in room.start(): ...
    async for event in room.post("looks good", author="author"): ...
"""

from framework.errors import (
    InputError,
    ModelError,
    RoomBusyError,
    ScenarioError,
    StaffroomError,
    StorageError,
    WorkspaceEscapeError,
)
from framework.runtime.room import Room, RoomStatus
from framework.sessions.events import Event, EventKind
from framework.settings import Settings
from framework.staffroom import Staffroom

__all__ = [
    "Event",
    "EventKind",
    "InputError",
    "ModelError",
    "Room",
    "RoomBusyError",
    "RoomStatus",
    "ScenarioError",
    "Settings",
    "Staffroom",
    "StaffroomError",
    "StorageError",
    "WorkspaceEscapeError",
]
