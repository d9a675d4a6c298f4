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
    from framework.extensions.context import EmployeeModel, HookContext
    from framework.extensions.hooks import (
        BackgroundDue,
        Hook,
        HookPoint,
        MessageRouted,
        ReplyLogged,
        RunEnded,
        SessionEnded,
    )
    from framework.extensions.legacy import HookCall, Reply, RunEnd, SessionEnd
    from framework.extensions.registry import Extensions
    from framework.extensions.tools import ToolBuilder, ToolScope
    from framework.memory.consolidation import ConsolidationReport
    from framework.models.factory import ModelFactory
    from framework.models.profile import ModelProfile
    from framework.runtime.defaults import default_extensions
    from framework.runtime.recovery import RebuildError
    from framework.runtime.room import Room
    from framework.runtime.room_status import RebuildReport, RoomStatus
    from framework.sessions.events import Event, EventKind
    from framework.sessions.workspace import Workspace
    from framework.settings import Settings
    from framework.specs.employee import EmployeeCard
    from framework.specs.model_spec import ModelSpec
    from framework.staffroom import Staffroom
    from framework.stores import Stores
    from framework.tools.base import Tool, ToolResult

# Public name -> the module that defines it (the imports above, for type checkers).
_HOMES: dict[str, str] = {
    "BackgroundDue": "framework.extensions.hooks",
    "CardError": "framework.errors",
    "ConsolidationReport": "framework.memory.consolidation",
    "EmployeeCard": "framework.specs.employee",
    "EmployeeModel": "framework.extensions.context",
    "Event": "framework.sessions.events",
    "EventKind": "framework.sessions.events",
    "Extensions": "framework.extensions.registry",
    "Hook": "framework.extensions.hooks",
    "HookCall": "framework.extensions.legacy",
    "HookContext": "framework.extensions.context",
    "HookPoint": "framework.extensions.hooks",
    "InputError": "framework.errors",
    "MemoryCapExceeded": "framework.errors",
    "MessageRouted": "framework.extensions.hooks",
    "ModelError": "framework.errors",
    "ModelFactory": "framework.models.factory",
    "ModelProfile": "framework.models.profile",
    "ModelSpec": "framework.specs.model_spec",
    "PromptTemplateError": "framework.errors",
    "RebuildError": "framework.runtime.recovery",
    "RebuildReport": "framework.runtime.room_status",
    "Reply": "framework.extensions.legacy",
    "ReplyLogged": "framework.extensions.hooks",
    "Room": "framework.runtime.room",
    "RoomBusyError": "framework.errors",
    "RoomStatus": "framework.runtime.room_status",
    "RunEnd": "framework.extensions.legacy",
    "RunEnded": "framework.extensions.hooks",
    "ScenarioError": "framework.errors",
    "SessionEnd": "framework.extensions.legacy",
    "SessionEnded": "framework.extensions.hooks",
    "Settings": "framework.settings",
    "SopCardError": "framework.errors",
    "Staffroom": "framework.staffroom",
    "Stores": "framework.stores",
    "StaffroomError": "framework.errors",
    "StorageError": "framework.errors",
    "Tool": "framework.tools.base",
    "ToolBuilder": "framework.extensions.tools",
    "ToolResult": "framework.tools.base",
    "ToolScope": "framework.extensions.tools",
    "UnknownNameError": "framework.errors",
    "Workspace": "framework.sessions.workspace",
    "WorkspaceEscapeError": "framework.errors",
    "default_extensions": "framework.runtime.defaults",
}

__getattr__, __dir__ = exports(__name__, _HOMES)


__all__ = [
    "BackgroundDue",
    "CardError",
    "ConsolidationReport",
    "EmployeeCard",
    "EmployeeModel",
    "Event",
    "EventKind",
    "Extensions",
    "Hook",
    "HookCall",
    "HookContext",
    "HookPoint",
    "InputError",
    "MemoryCapExceeded",
    "MessageRouted",
    "ModelError",
    "ModelFactory",
    "ModelProfile",
    "ModelSpec",
    "PromptTemplateError",
    "RebuildError",
    "RebuildReport",
    "Reply",
    "ReplyLogged",
    "Room",
    "RoomBusyError",
    "RoomStatus",
    "RunEnd",
    "RunEnded",
    "ScenarioError",
    "SessionEnd",
    "SessionEnded",
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
