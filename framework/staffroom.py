"""The composition root: open a data folder, get Rooms and DMs.

Everything hangs off one :class:`Staffroom`; nothing runs at import and there is no global
state, so several can live in one process (tests open one per temporary folder).

    async with await Staffroom.open(".staffroom") as staff:
        room = await staff.room("launch-42", "tech-article")
        async for event in room.start():
            print(event.author, event.text)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path
from types import TracebackType
from typing import Self

from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from framework.data_folder import CHECKPOINTS, SOPS
from framework.errors import UnknownNameError
from framework.knowledge.after_session import SessionKnowledge
from framework.knowledge.reflection import ReflectionRun, reflect_due
from framework.models.factory import ModelFactory
from framework.models.resolve import ModelResolver
from framework.names import check_name
from framework.prompts.environment import PromptRenderer
from framework.runtime.builtins import default_extensions
from framework.runtime.deps import RoomDeps, RoomModels
from framework.runtime.extensions import Extensions
from framework.runtime.graph import RoomGraph, build_graph
from framework.runtime.knowledge_hooks import extract_span, register_knowledge
from framework.runtime.plan import RoomPlan, compile_plan
from framework.runtime.room import Room
from framework.runtime.turn_context import system_prompt
from framework.sessions.events import Event, EventKind
from framework.sessions.keys import Channel, SessionKey
from framework.settings import Settings
from framework.sop.library_io import import_library
from framework.sop.service import SopService
from framework.specs.catalog import Catalog
from framework.specs.knowledge_file import KNOWLEDGE_FILE, load_knowledge_file
from framework.specs.models_file import MODELS_FILE, ModelRegistry
from framework.specs.scenario import Scenario
from framework.stores import Stores, settings_for


class Staffroom:
    """A data folder plus a project (agents, scenarios, SOPs): the handle embedders hold."""

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        stores: Stores,
        saver: AsyncSqliteSaver,
        model_factory: ModelFactory | None,
        sops: SopService,
        models: ModelRegistry | None = None,
        extensions: Extensions | None = None,
    ) -> None:
        self.settings = settings
        self.stores = stores
        """The data folder's stores (what the reading commands open alone)."""
        self.sops = sops
        self.catalog = catalog
        self.sessions = stores.sessions
        self._graph: RoomGraph = build_graph(saver)
        self._renderer = PromptRenderer()
        self._rooms: dict[str, Room] = {}
        self._deps: dict[str, RoomDeps] = {}
        self.memory = stores.memory
        self.models = models or ModelRegistry()
        """The project's named models (``models.yaml``)."""
        self._resolver = ModelResolver(settings, self.models, model_factory)
        self.knowledge = stores.knowledge()
        """Journals, trackers, topic files and the library (configured by knowledge.yaml)."""
        if extensions is None:
            extensions = default_extensions()
            register_knowledge(extensions, self.knowledge)
        self.extensions = extensions
        """Tools, hooks and prompt blocks rooms get (the built-ins, the knowledge layers, and
        what an embedder registers)."""

    @classmethod
    async def open(
        cls,
        data_dir: str | Path | None = None,
        *,
        settings: Settings | None = None,
        project_dir: str | Path | None = None,
        model_factory: ModelFactory | None = None,
        extensions: Extensions | None = None,
    ) -> Staffroom:
        """Open (creating if needed) the data folder; load the project's cards and scenarios.

        ``model_factory`` lets an embedder hand any LangChain chat model to any employee;
        ``extensions``: tools and hooks instead of the built-ins (start from
        ``default_extensions()`` to keep them), or register on ``staff.extensions``.
        """
        settings = settings_for(data_dir, settings, project_dir)
        project = settings.project_dir
        catalog = Catalog.load(project / "agents", project / "scenarios", project / "sop_library")
        models = ModelRegistry.load(project / MODELS_FILE)
        knowledge = load_knowledge_file(project / KNOWLEDGE_FILE)  # before anything opens
        stores = Stores(
            settings, writable=True, knowledge=knowledge, language_of=catalog.language_of
        )
        stores.folder.check_stores()  # a lost store is reported, never silently recreated empty
        try:
            saver = await stores.checkpoints()
            # SOP cards in sop_library/ are imported on start (idempotent; versions never
            # change).
            sops = await stores.sops()
        except BaseException:
            await stores.close()  # else aiosqlite's worker threads keep the process alive
            raise
        stores.folder.record(CHECKPOINTS, SOPS)
        return cls(settings, catalog, stores, saver, model_factory, sops, models, extensions)

    @classmethod
    async def admin(
        cls,
        data_dir: str | Path | None = None,
        *,
        settings: Settings | None = None,
        project_dir: str | Path | None = None,
        writes: bool = False,
        command: str = "",
    ) -> Stores:
        """Deprecated: use :meth:`Stores.open <framework.stores.Stores.open>` (same arguments;
        "admin" also names a role). Kept for one release."""
        warnings.warn(
            "Staffroom.admin() is deprecated: use framework.Stores.open() (same arguments)",
            DeprecationWarning,
            stacklevel=2,
        )
        return await Stores.open(
            data_dir, settings=settings, project_dir=project_dir, writes=writes, command=command
        )

    async def close(self) -> None:
        """Finish background work, then close the checkpoint database and session files."""
        for room in self._rooms.values():
            await room.drain()
        await self._resolver.close()
        await self.stores.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def room(self, room_id: str, scenario: str | Path | Scenario) -> Room:
        """The Room ``room_id`` running ``scenario`` (an id, a YAML path, or a Scenario)."""
        key = SessionKey(Channel.ROOM, room_id)
        spec = scenario if isinstance(scenario, Scenario) else self.catalog.scenario(scenario)
        catalog = self._catalog_for(spec)
        problems = dict(self.sops.library_problems)
        if catalog.sop_dir is not None and catalog.sop_dir != self.catalog.sop_dir:
            # A user project's own SOPs.
            own = await import_library(self.sops.store, catalog.sop_dir, strict=False)
            problems.update(own.problems)
        for sop_id in spec.referenced_sop_ids():
            if (problem := problems.get(sop_id)) is not None:
                raise problem.with_traceback(None)  # its card is broken: never run on a stale one
        # The store is the source of truth: an SOP published only there (an extracted
        # practice, once approved) drives a room like one with a card. The room gets each
        # SOP's best version, or the side of a running trial it lands on (sop/trials.py).
        ids = spec.referenced_sop_ids()
        versions, trials = await self.sops.for_new_room(ids, str(key), spec.settings)
        catalog.check_scenario(spec, versions)  # errors name the scenario's (or card's) lines
        extra = await self.recommendations(f"scenario:{spec.id}", exclude=list(versions))
        plan = compile_plan(spec, catalog, versions, recommended=extra)
        return self._room(key, replace(plan, sop_trials=trials) if trials else plan)

    def _catalog_for(self, scenario: Scenario) -> Catalog:
        # A scenario file from another project runs against that project's agents and SOPs
        # (where it has them), so a user's own scenario needs no change to ours.
        if scenario.source.is_file():
            return Catalog.for_scenario_file(scenario.source, fallback=self.catalog)
        return self.catalog

    async def dm(self, employee: str, user: str) -> Room:
        """A one-to-one chat of ``user`` with ``employee``: session ``dm:{user}@{employee}``."""
        check_name(user, field="user")
        card = self.catalog.employee(employee)
        scenario = Scenario.model_validate(
            {
                "id": f"dm-{card.id}",
                "title": f"DM with {card.display_name}",
                "participants": [card.id],
                "humans": [user],
                "announcement": {"text": await self.recommendations(f"employee:{card.id}")},
            }
        )
        key = SessionKey(Channel.DM, f"{user}@{card.id}")
        return self._room(key, compile_plan(scenario, self.catalog, {}))

    async def extract(self, session: str) -> SessionKnowledge:
        """``staffroom extract``: journal, extract and route what a session said since its last
        extraction (the whole log the first time), as its end would. Nothing new: a report with
        no run. Idempotent: the entry id is the newest event's."""
        room = await self.session(session)
        deps = self._deps[room.key]
        span = deps.log.tail_until(lambda e: e.kind == EventKind.KNOWLEDGE)
        span = [e for e in span if e.kind not in (EventKind.KNOWLEDGE, EventKind.SESSION_END)]
        if not span:
            return SessionKnowledge(room.key)
        return await extract_span(
            self.knowledge, deps, deps.sink(), span, entry_id=f"extract-{span[-1].id}"
        )

    async def reflect(
        self, employee: str | None = None, *, today: date | None = None
    ) -> list[ReflectionRun]:
        """Run the due reflections of ``employee`` (None: everyone in the catalog) as of
        ``today`` (None: the knowledge layers' today); see :mod:`framework.knowledge.reflection`."""
        names = [employee] if employee is not None else sorted(self.catalog.employees)
        return await reflect_due(self.knowledge, self.dm, names, today=today)

    async def close_idle(self) -> dict[str, list[Event]]:
        """End the sessions of this process's rooms and DMs that have been silent for
        ``Settings.session_idle`` seconds, then run the reflections that are due (what a
        long-running server calls now and then; see :mod:`framework.knowledge.reflection`).

        Returns the events each ended session caused, by session key.
        """
        ended: dict[str, list[Event]] = {}
        for key, room in list(self._rooms.items()):
            if room.idle:
                ended[key] = await room.close(reason="idle")
        for run in await self.reflect():
            ended[run.session] = run.events
        return ended

    async def recommendations(self, scope: str, *, exclude: Sequence[str] = ()) -> str:
        """Published SOPs in ``scope`` as text (see :meth:`SopService.recommendations`)."""
        return await self.sops.recommendations(scope, exclude=exclude)

    async def session(self, key: str, *, scenario_file: bool = False) -> Room:
        """Reopen a session by key (``room:<id>`` or ``dm:<user>@<employee>``): a room on the
        scenario id its log records, from the catalog only; ``scenario_file`` (the command
        line alone): else from the file its log names (see :meth:`Catalog.resumed_scenario`)."""
        parsed = SessionKey.parse(key)
        if parsed.channel == Channel.DM:
            user, _, employee = parsed.chat_id.rpartition("@")
            if not user:
                raise UnknownNameError(
                    f"'{key}' is not a DM session key",
                    field="session",
                    fix="use dm:<user>@<employee>",
                )
            return await self.dm(employee, user)
        log = self.sessions.log(parsed)
        entry = next((e for e in log.iter_events() if e.meta.get("entry")), None)
        if entry is None or not isinstance(entry.content, dict):
            known = ", ".join(str(k) for k in self.sessions.list_sessions()) or "none yet"
            raise UnknownNameError(
                f"no room {key} in {self.settings.data_dir}",
                field="session",
                fix=f"use one of: {known}",
            )
        project, content = self.settings.project_dir, entry.content
        spec = self.catalog.resumed_scenario(key, content, project=project, from_file=scenario_file)
        return await self.room(parsed.chat_id, spec)

    def _room(self, key: SessionKey, plan: RoomPlan) -> Room:
        cached = self._rooms.get(str(key))
        if cached is not None and cached.scenario_id == plan.scenario.id:
            return cached
        workspace = self.sessions.workspace(key)
        resolved = self._resolver.for_room(plan.scenario, plan.employees)
        deps = RoomDeps(
            key=key,
            plan=plan,
            log=self.sessions.log(key),
            workspace=workspace,
            tools=self.extensions.room_tools(plan.employees),
            models=RoomModels(resolved.chat, resolved.profiles, resolved.selector),
            extensions=self.extensions,
            renderer=self._renderer,
            settings=self.settings,
            memory=self.memory,
            sops=self.sops,
        )
        for eid in plan.employees:
            # Render each prompt once now: a broken template fails here, not mid-run.
            system_prompt(deps, employee=eid, why="selector", step=None)
        lock = self.stores.folder.room_lock(key)
        lock.parent.mkdir(parents=True, exist_ok=True)
        room = Room(deps, self._graph, lock)
        self._rooms[str(key)] = room
        self._deps[str(key)] = deps  # the composition root keeps what it composed
        return room
