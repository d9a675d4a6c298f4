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
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from framework.extensions.registry import Extensions
from framework.knowledge.after_session import SessionKnowledge
from framework.knowledge.reflection import ReflectionRun, reflect_due
from framework.models.factory import ModelFactory
from framework.models.resolve import ModelResolver
from framework.names import check_name
from framework.runtime.defaults import default_extensions
from framework.runtime.open_rooms import OpenRooms
from framework.runtime.plan import compile_plan
from framework.runtime.room import Room
from framework.sessions.events import Event
from framework.sessions.keys import Channel, SessionKey
from framework.settings import Settings
from framework.sop.service import SopService
from framework.specs.catalog import Catalog
from framework.specs.knowledge_file import KNOWLEDGE_FILE, load_knowledge_file
from framework.specs.models_file import MODELS_FILE, ModelRegistry
from framework.specs.scenario import Scenario, dm_scenario
from framework.stores import ClosedOnExit, Stores, settings_for

if TYPE_CHECKING:
    from framework.database.leases import Leases


class Staffroom(ClosedOnExit):
    """A data folder plus a project (agents, scenarios, SOPs): the handle embedders hold."""

    def __init__(
        self,
        settings: Settings,
        catalog: Catalog,
        stores: Stores,
        saver: BaseCheckpointSaver[Any],
        model_factory: ModelFactory | None,
        sops: SopService,
        models: ModelRegistry | None = None,
        extensions: Extensions | None = None,
        leases: Leases | None = None,
    ) -> None:
        self.settings = settings
        self.stores = stores
        """The data folder's stores (what the reading commands open alone)."""
        self.sops = sops
        self.catalog = catalog
        self.sessions, self.memory = stores.sessions, stores.memory
        self.models = models or ModelRegistry()
        """The project's named models (``models.yaml``)."""
        self._resolver = ModelResolver(settings, self.models, model_factory)
        self.knowledge = stores.knowledge()
        """Journals, trackers, topic files and the library (configured by knowledge.yaml)."""
        if extensions is None:
            extensions = default_extensions(settings, self.memory, sops, self.knowledge)
        self.extensions = extensions
        """Tools, hooks and prompt blocks rooms get (the built-ins, the knowledge layers, and
        what an embedder registers)."""
        self._rooms = OpenRooms(
            settings,
            saver,
            self.sessions,
            self.memory,
            sops,
            self._resolver,
            extensions,
            leases=leases,
        )

    @classmethod
    async def open(
        cls,
        data_dir: str | Path | None = None,
        *,
        settings: Settings | None = None,
        project_dir: str | Path | None = None,
        model_factory: ModelFactory | None = None,
        extensions: Extensions | None = None,
        owner: str | None = None,
    ) -> Staffroom:
        """Open (creating if needed) the data folder; load the project's cards and scenarios.

        ``model_factory`` lets an embedder hand any LangChain chat model to any employee;
        ``extensions``: tools and hooks instead of the built-ins, or register on
        ``staff.extensions`` (which starts with them); ``owner``: whose name leases are
        taken under on a database (None: this replica's)."""
        settings = settings_for(data_dir, settings, project_dir)
        project = settings.project_dir
        catalog = Catalog.load(project / "agents", project / "scenarios", project / "sop_library")
        models = ModelRegistry.load(project / MODELS_FILE)
        knowledge = load_knowledge_file(project / KNOWLEDGE_FILE)  # before anything opens
        lang = catalog.language_of
        stores = Stores(settings, writable=True, knowledge=knowledge, language_of=lang, owner=owner)
        saver, sops = await stores.open_for_rooms()  # sop_library/'s cards imported (idempotent)
        leases = await stores.leases()
        return cls(
            settings, catalog, stores, saver, model_factory, sops, models, extensions, leases
        )

    @classmethod
    async def admin(cls, data_dir: str | Path | None = None, **options: Any) -> Stores:
        """Deprecated (one release; "admin" also names a role): use :meth:`Stores.open`."""
        message = "Staffroom.admin() is deprecated: use framework.Stores.open() (same arguments)"
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return await Stores.open(data_dir, **options)

    async def close(self) -> None:
        """Finish background work, then close the checkpoint database and session files."""
        await self._rooms.drain()
        await self._resolver.close()
        await self.stores.close()

    async def room(self, room_id: str, scenario: str | Path | Scenario) -> Room:
        """The Room ``room_id`` running ``scenario`` (an id, a YAML path, or a Scenario)."""
        key = SessionKey(Channel.ROOM, room_id)
        spec = scenario if isinstance(scenario, Scenario) else self.catalog.scenario(scenario)
        # A scenario file from another project runs against that project's agents and SOPs
        # (where it has them), so a user's own scenario needs no change to ours.
        catalog = self.catalog
        if spec.source.is_file():
            catalog = Catalog.for_scenario_file(spec.source, fallback=self.catalog)
        own = catalog.sop_dir if catalog.sop_dir != self.catalog.sop_dir else None
        # The store is the source of truth: an SOP published only there (an extracted
        # practice, once approved) drives a room like one with a card. The room gets each
        # SOP's best version, or the side of a running trial it lands on (sop/trials.py).
        ids = spec.referenced_sop_ids()
        versions, trials = await self.sops.for_new_room(ids, str(key), spec.settings, library=own)
        catalog.check_scenario(spec, versions)  # errors name the scenario's (or card's) lines
        extra = await self.recommendations(f"scenario:{spec.id}", exclude=list(versions))
        plan = compile_plan(spec, catalog, versions, recommended=extra)
        return self._rooms.room(key, replace(plan, sop_trials=trials) if trials else plan)

    async def dm(self, employee: str, user: str) -> Room:
        """A one-to-one chat of ``user`` with ``employee``: session ``dm:{user}@{employee}``."""
        check_name(user, field="user")
        card = self.catalog.employee(employee)
        tips = await self.recommendations(f"employee:{card.id}")
        scenario = dm_scenario(card.id, card.display_name, user, tips)
        key = SessionKey(Channel.DM, f"{user}@{card.id}")
        return self._rooms.room(key, compile_plan(scenario, self.catalog, {}))

    async def extract(self, session: str) -> SessionKnowledge:
        """``staffroom extract``: journal, extract and route what ``session`` said since its last
        extraction, as its end would (see :meth:`Room.extract_knowledge`)."""
        room = await self.session(session)
        return await room.extract_knowledge(self.knowledge)

    async def reflect(
        self, employee: str | None = None, *, today: date | None = None
    ) -> list[ReflectionRun]:
        """Run the due reflections of ``employee`` (None: everyone in the catalog) as of
        ``today`` (None: the knowledge layers' today); see :mod:`framework.knowledge.reflection`."""
        names = [employee] if employee is not None else sorted(self.catalog.employees)
        return await reflect_due(self.knowledge, self.dm, names, today=today)

    async def close_idle(self, *, reflect: bool = True) -> dict[str, list[Event]]:
        """End the sessions of this process's rooms and DMs silent for ``Settings.session_idle``
        seconds, then (``reflect``) run the reflections that are due; returns the events each
        ended session caused, by session key. A server's scheduler calls it with ``reflect``
        False: it fires the reflections itself, at the project's ``reflection_time``."""
        ended: dict[str, list[Event]] = {}
        for key, room in self._rooms.items():
            if room.idle:
                ended[key] = await room.close(reason="idle")
        if reflect:
            ended.update({run.session: run.events for run in await self.reflect()})
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
            user, employee = parsed.dm_people()
            return await self.dm(employee, user)
        content, project = self.sessions.room_entry(parsed), self.settings.project_dir
        spec = self.catalog.resumed_scenario(key, content, project=project, from_file=scenario_file)
        return await self.room(parsed.chat_id, spec)
