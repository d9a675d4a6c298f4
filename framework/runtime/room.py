"""Room and DM handles: post a message, iterate the events it causes.

A handle delegates: the graph (``runtime/graph.py``) runs turns, the JSONL log stores what
happened, registered hooks (``extensions/hooks.py``) do the work around them. One run at a time
per room: an asyncio lock in the process and, across processes, a file lock or, with a
database, the room's lease (``runtime/run_lock.py``); others may still append to its history.

A session ends with :meth:`Room.close`, or after ``Settings.session_idle`` seconds of silence
(noticed when the next message comes): a ``session_end`` event, and its hooks run once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END
from langgraph.types import Command, StateSnapshot

from framework.database.pending_input import input_left
from framework.errors import InputError, StorageError
from framework.extensions.hooks import BackgroundDue
from framework.knowledge.after_session import SessionKnowledge
from framework.knowledge.base import KnowledgeBase
from framework.knowledge.extension import extract_new
from framework.memory.consolidation import ConsolidationReport
from framework.memory.extension import consolidator_for
from framework.models.profile import ModelProfile
from framework.runtime.accepted import Accepted, accept
from framework.runtime.deps import RoomContext, RoomDeps
from framework.runtime.graph import RoomGraph, run_input
from framework.runtime.held_writes import holding_writes
from framework.runtime.recovery import REPAIR, RebuildError, integrity_problem, rebuild_state
from framework.runtime.room_status import RebuildReport, RoomStatus
from framework.runtime.run_lock import RunGuard
from framework.runtime.session_end import end_session, is_idle
from framework.runtime.state import CONSUMED_WINDOW, Routed, next_index
from framework.sessions.events import (
    Event,
    EventKind,
    check_own_id,
    client_message_id,
    make_event,
    opening_message_id,
)
from framework.sessions.follow import follow_log
from framework.sessions.workspace import Workspace
from framework.specs.scenario import ScenarioSettings


class Room:
    """A group (or one-to-one) conversation bound to a scenario. Get one from ``Staffroom``."""

    def __init__(self, deps: RoomDeps, graph: RoomGraph, lock: RunGuard) -> None:
        self._deps = deps
        self._graph = graph
        self._config: Any = {"configurable": {"thread_id": str(deps.key)}}
        self._lock = lock
        self._background: asyncio.Task[None] | None = None

    @property
    def key(self) -> str:
        """Session key, e.g. ``room:launch-42`` or ``dm:alice@pm``."""
        return str(self._deps.key)

    @property
    def scenario_id(self) -> str:
        """The scenario this room runs."""
        return self._deps.plan.scenario.id

    @property
    def participants(self) -> list[str]:
        """The employees of the room (ids, in the scenario's order)."""
        return self._deps.plan.participants

    @property
    def humans(self) -> list[str]:
        """The people of the room (a DM: its user); the first is the default author."""
        return self._deps.plan.humans

    @property
    def display_names(self) -> dict[str, str]:
        """Employee id -> the name shown in the room."""
        return {eid: card.display_name for eid, card in self._deps.plan.employees.items()}

    @property
    def model_labels(self) -> dict[str, str]:
        """Employee id -> the label of the model it thinks with (``simulated`` offline)."""
        return {eid: self._deps.models.label(eid) for eid in self._deps.plan.employees}

    @property
    def model_profiles(self) -> dict[str, ModelProfile]:
        """Employee id -> what its model can take (where it is, window, output cap, roles)."""
        return {eid: self._deps.models.profiles[eid] for eid in self._deps.plan.employees}

    @property
    def sop_ref(self) -> str | None:
        """``id@version`` of the SOP this room enters on (the best version when built)."""
        return self._deps.plan.sop_ref

    @property
    def settings(self) -> ScenarioSettings:
        """The scenario's settings for this room (turn cap, stop words, memory window...)."""
        return self._deps.plan.settings

    @property
    def workspace(self) -> Workspace:
        """The folder the room's employees share (its files are the room's work)."""
        return self._deps.workspace

    @property
    def idle(self) -> bool:
        """Whether the session is open and silent past ``Settings.session_idle``."""
        return is_idle(self._deps)

    def tools(self, employee: str) -> list[str]:
        """The tools ``employee`` holds in this room (built-in and registered)."""
        return self._deps.tools.names(employee)

    def history(self, last: int | None = None) -> list[Event]:
        """Events of this session (the last ``last`` ones, read from the end of the file)."""
        return self._deps.log.tail(last) if last is not None else self._deps.log.read_all()

    async def status(self) -> RoomStatus:
        """The room's control state from its checkpoint."""
        snap = await self._graph.aget_state(self._config)
        values: dict[str, Any] = dict(snap.values or {})
        waiting = bool(snap.interrupts)
        asked: dict[str, Any] = {}
        if waiting and isinstance(snap.interrupts[0].value, dict):
            asked = snap.interrupts[0].value
        return RoomStatus(
            entered=bool(values.get("entered")),
            phase=values.get("phase"),
            waiting=waiting,
            waiting_for=self._deps.plan.humans if waiting else [],
            step=next_index(values),
            steps_total=len(values.get("steps", [])),
            turns=int(values.get("turns", 0)),
            sop=values.get("sop"),
            stop_reason=values.get("stop_reason"),
            wait_reason=asked.get("reason"),
            error=asked.get("error"),
        )

    async def start(
        self, message: str | None = None, *, author: str | None = None
    ) -> AsyncIterator[Event]:
        """Enter the room (or continue a run a crashed process left) until it waits or ends.

        ``message``: the room's input (a ticket, a brief), said by ``author`` (default: the
        first human): posted as :meth:`post` does (a room that has not entered enters with
        it, so its first step works on it), under an id made from the room, the author and
        the text, so the same start again posts nothing.
        """
        if message is not None:
            accepted = self.accepts(message, author=author)
            mid = opening_message_id(self.key, accepted.author, message)
            async for event in self.post(accepted, message_id=mid):
                yield event
            return
        async with self._running():
            async for event in self._drive(None):
                yield event
        self._in_background()

    def subscribe(self, after: str | None = None) -> AsyncIterator[Event]:
        """Every event of this session after the one with id ``after`` (None: from the
        start), then each new one as it is appended, by this process or any other, until the
        caller stops. What ``staffroom watch``, the server's streams and webhooks read."""
        return follow_log(self._deps.log.path, after=after)

    def interrupt(self) -> None:
        """Ask the run under way to stop at its next safe point, between two turns (a reply
        is never cut off): the room pauses with ``wait_reason`` ``interrupted`` and the next
        posted message goes on from there. Picks that answered the older message are dropped
        in free chat; SOP steps stay where they are. A room not running ignores it."""
        if self._lock.locked():
            self._deps.control.interrupt = True

    def accepts(self, text: str, *, author: str | None = None) -> Accepted:
        """``text`` by ``author`` as :meth:`post` takes it, or its InputError (no I/O)."""
        return accept(self._deps.plan.humans, text, author)

    async def post(
        self,
        text: str | Accepted,
        *,
        author: str | None = None,
        message_id: str | None = None,
        client_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> AsyncIterator[Event]:
        """Post a human message and yield it and every event it causes, as they happen.

        A message whose id is in the history already is neither stored nor answered again
        (however long ago it came). ``client_id``: an id chosen outside (a chat platform's,
        an HTTP client's); the message is stored under ``client_event_id(client_id)`` with
        the id in ``meta.client_id``, so no id anyone sends can name one of the room's own
        events. ``message_id``: the event id itself, for an id the caller derives and no
        one else chooses (a script line's); one naming another kind of event is refused.
        ``meta`` is kept on the message's event (e.g. the ids it merges). ``text`` from
        :meth:`accepts` (its author inside) is not checked again."""
        accepted = text if isinstance(text, Accepted) else self.accepts(text, author=author)
        who, text = accepted.author, accepted.text
        if message_id is not None and client_id is not None:
            raise InputError("give message_id or client_id, not both", field="message_id")
        async with self._running():
            self._deps.control.interrupt = False  # asked of an earlier run, which has ended
            # Checked before storing (not into a broken room); the run lock keeps it current.
            entered = bool((snap := await self._checked()).values)
            log = self._deps.log
            extra = {"human": True, **(meta or {})}
            if not entered:  # it opens the room: its input, which the first step works on
                extra["opening"] = True
            if client_id is not None:
                message_id = client_message_id(client_id, who, log.find(client_id))
                extra["client_id"] = client_id
            elif message_id is not None:
                check_own_id(log.find(message_id), self.key)
            if message_id is None or not log.has(message_id):
                # After a long silence the session has ended: close it before this message.
                for ended in await self._end_if_idle():
                    yield ended
            event = make_event(self.key, EventKind.MESSAGE, who, text, id=message_id, meta=extra)
            if log.append(event):
                log.sync()
                yield event
            elif await self._already_routed(event.id):
                # Answered already, unless a crash cut its run short: finish that run now.
                async for produced in self._drive(None, snap):
                    yield produced
                return
            routed: Routed = {"id": event.id, "author": who, "content": text}
            if extra.get("opening"):  # hooks know it is the room's input, not feedback
                routed["opening"] = True
            async for produced in self._drive(routed, snap):
                yield produced
        self._in_background()

    async def retry(self) -> AsyncIterator[Event]:
        """Retry the step a model error paused (after a fix), posting nothing; a room that
        waits on anything else is left as it is (one waiting for people goes on with post)."""
        async with self._running():
            async for event in self._drive(None):  # a run a kill cut short (its answer) first
                yield event
            status = await self.status()
            if status.wait_reason != "model_error":
                return
            async for event in self._stream(Command(resume={"retry": True})):
                yield event
        self._in_background()

    async def close(self, *, reason: str = "closed") -> list[Event]:
        """End the session now: run the ``session_end`` hooks once, then log its end.

        Returns the events this caused (hook events, then the ``session_end`` event); none
        when the session has already ended and nothing was said since. The room stays
        usable: the next message starts a new session.
        """
        await self.drain()
        async with self._running():
            return await end_session(self._deps, reason)

    async def consolidate(self, *, force: bool = False) -> ConsolidationReport:
        """Fold old turns into HISTORY.md and MEMORY.md now (``force``: even below the window):
        what runs in the background after replies (waited for first), holding the room as a
        run does (on a database its lease: the log takes no line without it)."""
        await self.drain()
        async with self._running():
            return await consolidator_for(
                RoomContext(self._deps, self._deps.sink()), self._deps.memory
            ).run(force=force)

    async def extract_knowledge(self, kb: KnowledgeBase) -> SessionKnowledge:
        """Journal, extract and route into ``kb`` what was said since the last extraction."""
        async with self._running():
            return await extract_new(kb, RoomContext(self._deps, self._deps.sink()))

    async def drain(self) -> None:
        """Wait for background work (``background`` hooks) started by earlier replies: a
        hook's recorded failure is an ``error`` event; a bug in one is raised here."""
        task, self._background = self._background, None
        if task is not None:
            await task

    def _in_background(self) -> None:
        # After the reply has been yielded, so background work never delays it.
        if self._background is None or self._background.done():
            self._background = asyncio.create_task(self._background_hooks())

    async def _background_hooks(self) -> None:
        deps = self._deps
        last = deps.log.tail(1)
        point_id = f"bg-{last[0].id}" if last else "bg"
        await deps.extensions.hooks.run(BackgroundDue(point_id), RoomContext(deps, deps.sink()))

    async def _end_if_idle(self) -> list[Event]:
        if not is_idle(self._deps):
            return []
        await self.drain()
        return await end_session(self._deps, "idle")

    async def _already_routed(self, message_id: str) -> bool:
        snap = await self._graph.aget_state(self._config)
        if message_id in (snap.values or {}).get("consumed", []):
            return True
        # The checkpoint keeps the last CONSUMED_WINDOW routed ids: a message with that many
        # people's after it was routed long ago (or cut off, reported by a rebuild); a newer
        # one not in it never was (later events prove nothing: background hooks append too).
        after = self._deps.log.tail_until(lambda e: e.id == message_id)[1:]
        return sum(1 for e in after if e.from_person) >= CONSUMED_WINDOW

    async def rebuild(self) -> RebuildReport:
        """Put the room's checkpoint back in line with its log (after either was lost).

        The room is rebuilt at its last pause, entry or outcome as its log records them
        (``runtime/recovery.py``); a room whose log holds no entry is reset, so it enters
        afresh. No model is called. This is what ``staffroom doctor --repair`` runs.
        """
        async with self._running():
            snap = await self._graph.aget_state(self._config)
            before = integrity_problem(dict(snap.values or {}), self._deps.log)
            events = self._deps.log.read_all()
            plan = self._deps.plan
            rebuilt = rebuild_state(events, plan.step_states(), plan.sop_ref)  # or RebuildError
            if rebuilt is not None and rebuilt.values.get("scenario") not in (
                None,
                self.scenario_id,
            ):
                raise RebuildError(
                    f"its log was written by scenario '{rebuilt.values['scenario']}', "
                    f"not '{self.scenario_id}'"
                )
            checkpointer = self._graph.checkpointer
            if isinstance(checkpointer, BaseCheckpointSaver):
                await checkpointer.adelete_thread(self._config["configurable"]["thread_id"])
            if rebuilt is None:
                return RebuildReport(self.key, before, "reset", None, [])
            values, to = rebuilt.values, rebuilt.resume_at
            goto, node = (END, "route") if to == "end" else (to, "turn")
            command = Command(goto=goto, update=values)
            await self._graph.aupdate_state(self._config, command, as_node=node)
            if to == "human":
                # Re-enter the pause: its wait event is already logged (same id, skipped).
                async for _ in self._stream(None):
                    pass
            return RebuildReport(self.key, before, to, rebuilt.from_event, rebuilt.unrouted)

    async def _checked(self) -> StateSnapshot:
        snap = await self._graph.aget_state(self._config)
        problem = integrity_problem(dict(snap.values or {}), self._deps.log)
        if problem is not None:
            raise StorageError(
                f"room {self.key}: {problem}. Nothing was run or stored. Restore the lost file "
                f"from a backup, or rebuild the room's checkpoint from its log: {REPAIR} "
                "(or Room.rebuild())"
            )
        return snap

    async def _drive(
        self, message: Routed | None, checked: StateSnapshot | None = None
    ) -> AsyncIterator[Event]:  # checked: the state post() checked before storing (once)
        snap = checked or await self._checked()
        if snap.values and snap.values.get("scenario") not in (None, self.scenario_id):
            raise InputError(
                f"session {self.key} was created from scenario '{snap.values['scenario']}'",
                field="scenario",
                fix=f"open it with scenario '{snap.values['scenario']}', or use another room id",
            )
        # A run a kill cut short is finished first: cut after a node's saved writes, it leaves
        # tasks but no ``next``; cut after LangGraph saved its input, that (pending_input.py).
        cut = (snap.next or snap.tasks) and not snap.interrupts
        if cut or await input_left(self._graph.checkpointer, snap):
            async for event in self._stream(None):
                yield event
            snap = await self._graph.aget_state(self._config)
            if message is not None and message["id"] in snap.values.get("consumed", []):
                return  # the cut run was this message's (posted again), answered once
        if message is None:
            if not snap.values:
                async for event in self._stream({"inbox": []}):
                    yield event
            return
        async for event in self._stream(run_input(snap.values, bool(snap.interrupts), message)):
            yield event

    async def _stream(self, payload: Any) -> AsyncIterator[Event]:
        # "sync": a step's checkpoint is written before the next step runs, so the log is at
        # most the step under way ahead of it (tests/database/test_cut_run_ids.py).
        async with holding_writes(self._graph.checkpointer, self.key):
            async for item in self._graph.astream(
                payload, self._config, context=self._deps, stream_mode="custom", durability="sync"
            ):
                if isinstance(item, Event):
                    yield item

    def _running(self) -> RunGuard:
        return self._lock
