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

The names load on first use (module ``__getattr__``): ``import framework`` alone, as every
``staffroom`` command does, must not pay for langgraph and langchain (see
benchmarks/cli_startup.py); ``from framework import Staffroom`` works as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.lazy import exports

if TYPE_CHECKING:
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
    from framework.tools.base import Tool, ToolResult

# Public name -> the module that defines it (the imports above, for type checkers).
_HOMES: dict[str, str] = {
    "CardError": "framework.errors",
    "ConsolidationReport": "framework.memory.consolidation",
    "EmployeeCard": "framework.specs.employee",
    "Event": "framework.sessions.events",
    "EventKind": "framework.sessions.events",
    "Extensions": "framework.runtime.extensions",
    "Hook": "framework.runtime.hooks",
    "HookCall": "framework.runtime.hooks",
    "HookPoint": "framework.runtime.hooks",
    "InputError": "framework.errors",
    "MemoryCapExceeded": "framework.errors",
    "ModelError": "framework.errors",
    "ModelFactory": "framework.models.factory",
    "ModelProfile": "framework.models.profile",
    "ModelSpec": "framework.specs.model_spec",
    "PromptTemplateError": "framework.errors",
    "RebuildError": "framework.runtime.recovery",
    "RebuildReport": "framework.runtime.room_status",
    "Reply": "framework.runtime.hooks",
    "Room": "framework.runtime.room",
    "RoomBusyError": "framework.errors",
    "RoomStatus": "framework.runtime.room_status",
    "RunEnd": "framework.runtime.hooks",
    "ScenarioError": "framework.errors",
    "SessionEnd": "framework.runtime.hooks",
    "Settings": "framework.settings",
    "SopCardError": "framework.errors",
    "Staffroom": "framework.staffroom",
    "StaffroomError": "framework.errors",
    "StorageError": "framework.errors",
    "Tool": "framework.tools.base",
    "ToolBuilder": "framework.runtime.room_tools",
    "ToolResult": "framework.tools.base",
    "ToolScope": "framework.runtime.room_tools",
    "UnknownNameError": "framework.errors",
    "Workspace": "framework.sessions.workspace",
    "WorkspaceEscapeError": "framework.errors",
    "default_extensions": "framework.runtime.builtins",
}

__getattr__, __dir__ = exports(__name__, _HOMES)


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
    "Tool",
    "ToolBuilder",
    "ToolResult",
    "ToolScope",
    "UnknownNameError",
    "Workspace",
    "WorkspaceEscapeError",
    "default_extensions",
]
