"""The rooms one Staffroom has open: each session key's :class:`Room`, built once.

Building a room gathers what it runs with (its plan, log, workspace, tools, models, hooks,
memory and SOPs) and renders every employee's prompt once, so a broken template fails when
the room is opened, not mid-run. The composition root (``staffroom.py``) says what goes in;
this module puts it together.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from framework.data_folder import DataFolder
from framework.extensions.registry import Extensions
from framework.memory.store import MemoryStore
from framework.models.resolve import ModelResolver
from framework.prompts.environment import PromptRenderer
from framework.runtime.deps import RoomDeps, RoomModels
from framework.runtime.graph import RoomGraph, build_graph
from framework.runtime.plan import RoomPlan
from framework.runtime.room import Room
from framework.runtime.run_lock import FencedSaver, LeasedRunLock, RunGuard, RunLock
from framework.runtime.turn_context import system_prompt
from framework.sessions.keys import SessionKey
from framework.sessions.store import SessionStore
from framework.settings import Settings
from framework.sop.service import SopService

if TYPE_CHECKING:
    from framework.database.leases import Leases

__all__ = ["OpenRooms"]


class OpenRooms:
    """Rooms by session key, built on first use on one checkpointer (one graph for all)."""

    def __init__(
        self,
        settings: Settings,
        saver: BaseCheckpointSaver[Any],
        sessions: SessionStore,
        memory: MemoryStore,
        sops: SopService,
        models: ModelResolver,
        extensions: Extensions,
        *,
        leases: Leases | None = None,
    ) -> None:
        """Hold what every room shares; nothing is built yet. ``leases``: rooms run under
        a database lease (fencing the saver and the log) instead of a file lock."""
        self.settings = settings
        self._saver = saver
        self._leases = leases
        self._graph: RoomGraph = build_graph(saver)
        self._renderer = PromptRenderer()
        self._sessions = sessions
        self._memory = memory
        self._sops = sops
        self._models = models
        self.extensions = extensions
        """The tools, hooks and prompt blocks every room gets (the Staffroom's)."""
        self._rooms: dict[str, Room] = {}

    def room(self, key: SessionKey, plan: RoomPlan) -> Room:
        """The room ``key`` running ``plan``: the open one when it runs the same scenario,
        else a new one (its models resolved, its prompts rendered once)."""
        cached = self._rooms.get(str(key))
        if cached is not None and cached.scenario_id == plan.scenario.id:
            return cached
        workspace = self._sessions.workspace(key)
        resolved = self._models.for_room(plan.scenario, plan.employees)
        deps = RoomDeps(
            key=key,
            plan=plan,
            log=self._sessions.log(key),
            workspace=workspace,
            tools=self.extensions.room_tools(plan.employees),
            models=RoomModels(resolved.chat, resolved.profiles, resolved.selector),
            extensions=self.extensions,
            renderer=self._renderer,
            settings=self.settings,
            memory=self._memory,
            sops=self._sops,
        )
        for eid in plan.employees:
            # Render each prompt once now: a broken template fails here, not mid-run.
            system_prompt(deps, employee=eid, why="selector", step=None)
        room = Room(deps, self._graph, self._run_guard(key, deps))
        self._rooms[str(key)] = room
        return room

    def _run_guard(self, key: SessionKey, deps: RoomDeps) -> RunGuard:
        """One run at a time per room: a lease on the database when there is one (no file
        lock is trusted across machines), else a file lock in the data folder."""
        timeout = self.settings.run_lock_timeout
        if self._leases is not None:
            if not isinstance(self._saver, FencedSaver):
                raise TypeError("rooms under leases need a fenced checkpointer")
            return LeasedRunLock(str(key), self._leases, self._saver, deps.log, timeout)
        path = DataFolder(self.settings.data_dir).room_lock(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        return RunLock(str(key), path, timeout)

    def items(self) -> list[tuple[str, Room]]:
        """``(session key, room)`` of every room open now."""
        return list(self._rooms.items())

    async def drain(self) -> None:
        """Wait for every open room's background work."""
        for room in self._rooms.values():
            await room.drain()
