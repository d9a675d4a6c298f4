"""Staffroom: digital employees in DMs and group Rooms, with memory and versioned SOPs.

Public API::

    from framework import Staffroom
    staff = await Staffroom.open(".staffroom")
    room = await staff.room("launch-42", "tech-article")
    async for event in room.start(): ...
    async for event in room.post("looks good", author="author"): ...
    await room.close()  # the session ends; its session-end hooks run

Everything a public signature uses is exported here: the model spec and factory type
(``Staffroom.open(model_factory=...)``), the consolidation report, the extension types
(tools and hooks) and every error ``room()``, ``dm()`` and ``post()`` raise.
"""

from framework.errors import (
    CardError,
    InputError,
    MemoryCapExceeded,
    ModelError,
    PromptTemplateError,
    RoomBusyError,
    ScenarioError,
    SopCardError,
    StaffroomError,
    StorageError,
    UnknownNameError,
    WorkspaceEscapeError,
)
from framework.memory.consolidation import ConsolidationReport
from framework.models.factory import ModelFactory
from framework.models.profile import ModelProfile
from framework.runtime.builtins import default_extensions
from framework.runtime.extensions import Extensions
from framework.runtime.hooks import Hook, HookCall, HookPoint, Reply, RunEnd, SessionEnd
from framework.runtime.recovery import RebuildError
from framework.runtime.room import Room
from framework.runtime.room_status import RebuildReport, RoomStatus
from framework.runtime.room_tools import ToolBuilder, ToolScope
from framework.sessions.events import Event, EventKind
from framework.sessions.workspace import Workspace
from framework.settings import Settings
from framework.specs.employee import EmployeeCard
from framework.specs.model_spec import ModelSpec
from framework.staffroom import Staffroom
from framework.stores import Stores
from framework.tools.base import Tool, ToolResult

__all__ = [
    "CardError",
    "ConsolidationReport",
    "EmployeeCard",
    "Event",
    "EventKind",
    "Extensions",
    "Hook",
    "HookCall",
    "HookPoint",
    "InputError",
    "MemoryCapExceeded",
    "ModelError",
    "ModelFactory",
    "ModelProfile",
    "ModelSpec",
    "PromptTemplateError",
    "RebuildError",
    "RebuildReport",
    "Reply",
    "Room",
    "RoomBusyError",
    "RoomStatus",
    "RunEnd",
    "ScenarioError",
    "SessionEnd",
    "Settings",
    "SopCardError",
    "Staffroom",
    "StaffroomError",
    "StorageError",
    "Stores",
    "Tool",
    "ToolBuilder",
    "ToolResult",
    "ToolScope",
    "UnknownNameError",
    "Workspace",
    "WorkspaceEscapeError",
    "default_extensions",
]
