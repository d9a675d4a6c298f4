"""Rooms and DMs for long-running surfaces: the HTTP server and the chat-platform adapters.

The gateway adds what a room inside a chat bot needs on top of :class:`Room`:

- exactly-once ingestion: a message's platform id (or an ``Idempotency-Key``) is remembered
  per session in the ingest ledger (``ingest.sqlite``, or the database every replica shares),
  so a redelivery, even days later, after a restart or to another replica, returns the first
  delivery's result and changes nothing. Such ids live in their own namespace: no id a
  client sends can name one of the room's own events;
- rooms open on a scenario id of the project's catalog only, and resume on the scenario id
  their log records, never on a file a caller or the log names;
- double texting: a message arriving while the room answers is handled by the scenario's
  ``double_texting`` policy (enqueue, reject, interrupt, coalesce) in the session's lane,
  decided on the ledger's rows, so it holds across processes sharing a database
  (:mod:`framework.serving.room_queue`);
- a durable queue: an accepted message is in the ledger before it runs, so one a crash cut
  off runs when the gateway opens again (or, with a database, on another replica);
- listeners (webhooks, adapters) get every event the gateway's runs produce, in the
  background: a slow receiver never delays a room.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import time
from collections.abc import AsyncIterator

from framework.data_folder import DataFolder
from framework.errors import InputError, RoomBusyError
from framework.runtime.accepted import Accepted
from framework.runtime.room import Room
from framework.serving.claims import claim_names
from framework.serving.lanes import Item, Lane
from framework.serving.ledger import Entry, Ledger
from framework.serving.ledgers import open_ledger
from framework.serving.listeners import Listener, Listeners
from framework.serving.replays import ledger_result, replayed
from framework.serving.replicas import Presence
from framework.serving.results import PostResult, SessionState
from framework.serving.room_queue import RoomQueue
from framework.serving.settle import settle
from framework.sessions.entry import first_entry, scenario_of
from framework.sessions.events import Event, new_event_id, opening_message_id
from framework.sessions.follow import follow_log
from framework.sessions.keys import SessionKey
from framework.sop.remark_answers import REPLY_TO
from framework.staffroom import Staffroom

log = logging.getLogger("staffroom.gateway")


class Gateway:
    """Rooms and DMs for the server and the adapters (one per process and data folder)."""

    def __init__(self, staff: Staffroom, ledger: Ledger) -> None:
        self.staff = staff
        self.ledger = ledger
        self.queue = RoomQueue(ledger)
        """Order and double texting of each room across processes, on the ledger's rows."""
        self._lanes: dict[str, Lane] = {}
        self.listeners = Listeners()
        """Webhooks and adapters: what hears the events of the gateway's runs."""
        self._opening: dict[str, asyncio.Lock] = {}
        self._arrivals: dict[str, asyncio.Lock] = {}
        self._presence: Presence | None = None

    @classmethod
    async def open(cls, staff: Staffroom) -> Gateway:
        """The gateway over an open Staffroom; runs the messages a crash left unanswered.

        With a database: the ledger every replica shares, and this replica's presence there
        (:class:`~framework.serving.replicas.Presence`: it adopts what gone replicas left)."""
        db = await staff.stores.database()
        ledger = await open_ledger(DataFolder(staff.settings.data_dir).ingest, db)
        gateway = cls(staff, ledger)
        leases = await staff.stores.leases()
        if db is not None and leases is not None:
            every = staff.settings.lease_seconds
            gateway._presence = Presence(leases, db.owner, every, gateway._resume)
            await gateway._presence.start()
        await gateway._resume()
        if gateway._presence is not None:
            gateway._presence.sweep_every()
        return gateway

    async def close(self) -> None:
        """Let every accepted message run, deliver what listeners wait for, close the
        ledger (the Staffroom stays open: it is the caller's)."""
        if self._presence is not None:
            await self._presence.stop_sweeping()
        for lane in list(self._lanes.values()):
            await lane.wait_idle(closing=True)
        if self._presence is not None:  # after the runs: our queue is empty, nothing to adopt
            await self._presence.leave()
            self._presence = None
        await self.listeners.close()
        await self.ledger.close()

    # -- sessions ----------------------------------------------------------------------------

    async def open_room(
        self,
        room_id: str,
        scenario: str,
        *,
        message: str | Accepted | None = None,
        author: str | None = None,
        message_id: str | None = None,
        idempotency_key: str | None = None,
        start: bool = True,
    ) -> Room:
        """The room ``room_id`` running ``scenario``. A new one is returned once its entry is
        in its log, where every process on the data folder (replicas, workers) finds it; its
        first steps run in the background (they come through :meth:`subscribe`).

        ``scenario`` is an id of the project's catalog and nothing else: the name comes from
        a client or a platform's mapping, so it must never read a file (a scenario file from
        elsewhere runs from the command line). ``message``: the room's first message, by
        ``author`` (default: the first human), which its first step works on; accepted as
        :meth:`post` accepts one (the ledger, under ``message_id``, ``idempotency_key``, or an
        id made of room, author and text), so the same open again posts it once; one from
        ``accept`` (its author inside) is not checked again. ``start`` False: a new room waits
        for the message the caller posts next (an adapter's).
        """
        spec = self.staff.catalog.scenario_by_id(scenario)
        wanted = spec.id
        key = str(SessionKey.parse(f"room:{room_id}"))
        # One open at a time per room: two concurrent opens must share one Room and lane.
        async with self._opening.setdefault(key, asyncio.Lock()):
            known = self._lanes.get(key)
            running = known.room.scenario_id if known is not None else self._stored_scenario(key)
            if running is not None and running != wanted:
                raise InputError(
                    f"room {key} runs scenario '{running}', not '{wanted}'",
                    field="scenario",
                    fix=f"open it with scenario '{running}', or use another room id",
                )
            room = known.room if known is not None else await self.staff.room(room_id, spec)
            lane = self._lane(room)
        item = None
        if message is not None:
            if not isinstance(message, Accepted):
                message = room.accepts(message, author=author)
            who, text = self._person(room, message.author), message.text
            ids = (message_id, idempotency_key, opening_message_id(room.key, who, text))
            posted = await self._accept(room, who, text, ids, False, None, start=True)
            item = lane.holding(posted.message_id)
        elif start and known is None and not (await room.status()).entered and not lane.busy:
            item = Item(message_id=f"start-{room.key}", author="system", texts=[], start=True)
            lane.push(item)
        if running is None and item is not None:
            # Other processes find a room by its log's entry: a new room is opened once that is
            # written, so the next request, to any replica or worker, finds it.
            await item.entered.wait()
        return room

    @staticmethod
    def _person(room: Room, who: str) -> str:
        """``who`` (a checked name), refused when it is an employee of ``room``."""
        if who in room.participants:
            raise InputError(
                f"'{who}' is an employee of {room.key}; people post, employees answer",
                field="author",
                fix="post as a person (e.g. " + ", ".join(room.humans) + ")",
            )
        return who

    def _stored_scenario(self, key: str) -> str | None:
        log = self.staff.sessions.log(SessionKey.parse(key))
        return scenario_of(first_entry(log.iter_events()))

    async def open_dm(self, employee: str, user: str) -> Room:
        """The DM of ``user`` with ``employee``."""
        return self._lane(await self.staff.dm(employee, user)).room

    async def session(self, key: str) -> Room:
        """An open or stored session by key (``UnknownNameError`` when there is none)."""
        parsed = str(SessionKey.parse(key))
        lane = self._lanes.get(parsed)
        return lane.room if lane is not None else self._lane(await self.staff.session(parsed)).room

    def sessions(self) -> list[str]:
        """Keys of every stored session (and the ones opened here)."""
        stored = {str(k) for k in self.staff.sessions.list_sessions()}
        return sorted(stored | set(self._lanes))

    async def status(self, key: str) -> SessionState:
        """Where the session stands: waiting for whom, which step and SOP, its queue."""
        room = await self.session(key)
        lane = self._lane(room)
        running, waiting = await self.queue.counts(room.key)  # the ledger: every replica's
        entry = sum(1 for item in lane.items if not item.seq)  # the room's entry has no row
        return SessionState(
            session=room.key,
            scenario=room.scenario_id,
            room=await room.status(),
            policy=lane.policy,
            busy=lane.current is not None or running > 0,
            queued=waiting + entry,
            participants=room.participants,
            humans=room.humans,
            display_names=room.display_names,
            sop=room.sop_ref,
        )

    def subscribe(self, key: str, *, after: str | None = None) -> AsyncIterator[Event]:
        """The session's events after ``after`` (None: all), then live ones (see
        :meth:`Room.subscribe`); follows the log, so it sees every process's writes."""
        parsed = SessionKey.parse(key)
        lane = self._lanes.get(str(parsed))
        if lane is not None:
            return lane.room.subscribe(after)
        return follow_log(self.staff.sessions.log_path(parsed), after=after)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener(session, event)`` for every event the gateway's runs produce, in a
        background task (in order; a listener's exception is logged and skipped)."""
        self.listeners.add(listener)

    # -- posting -----------------------------------------------------------------------------

    async def post(
        self,
        key: str,
        text: str | Accepted,
        *,
        author: str | None = None,
        message_id: str | None = None,
        idempotency_key: str | None = None,
        reply_to: str | None = None,
        wait: bool = True,
        timeout: float | None = None,
    ) -> PostResult:
        """Post a person's message to the session ``key`` (see the module docstring).

        ``reply_to``: the id of the session's event it answers (its ``meta.reply_to``: a yes
        or no replying to an understood remark settles it); an id not there is refused.
        ``wait`` False returns as soon as the message is durably accepted (status
        ``queued``): what a platform that wants its acknowledgement in 3 seconds needs.
        ``timeout``: wait at most this many seconds for the run (behind a long queue, say),
        then return ``queued``; the run goes on, and posting the same id again later
        returns its result. ``text`` from ``Room.accepts`` is not checked again."""
        room = await self.session(key)
        accepted = text if isinstance(text, Accepted) else room.accepts(text, author=author)
        who, text = self._person(room, accepted.author), accepted.text
        stored = self.staff.sessions.log(SessionKey.parse(room.key))
        if reply_to is not None and not stored.has(reply_to):
            what = f"{room.key} has no event {reply_to[:80]!r} to reply to"
            fix = "pass the id of an event of this session (its history lists them)"
            raise InputError(what, field=REPLY_TO, fix=fix)
        ids = (message_id, idempotency_key, new_event_id())
        return await self._accept(room, who, text, ids, wait, timeout, reply_to=reply_to)

    async def _accept(
        self,
        room: Room,
        who: str,
        text: str,
        ids: tuple[str | None, str | None, str],
        wait: bool,
        timeout: float | None,
        *,
        start: bool = False,
        reply_to: str | None = None,
    ) -> PostResult:
        """Accept a message once: ledger, then lane. ``ids``: the client's message id, its
        Idempotency-Key, the gateway's own id; ``start``: the room's first message."""
        message_id, idempotency_key, own = ids
        if message_id is not None and not message_id.strip():
            raise InputError("message_id is empty", field="message_id", fix="omit it or set it")
        if message_id is not None:
            mid = message_id  # the platform's id names the message
        elif idempotency_key is not None:
            mid = "idem-" + hashlib.sha256(idempotency_key.encode()).hexdigest()[:20]
        else:
            mid = own
        # Both names of the message are remembered: a retry by either gets the first result.
        keys = [f"idem:{idempotency_key}"] if idempotency_key is not None else []
        keys += [f"msg:{mid}"] if message_id is not None or not keys else []
        lane = self._lane(room)
        # One arrival at a time per room in this process: the pool's claims may finish out
        # of order, and the lane must get messages in the order they came.
        async with self._arrivals.setdefault(room.key, asyncio.Lock()):
            refusing = lane.policy == "reject" and not start
            admitted = await claim_names(
                self.ledger, room.key, keys, message_id=mid, author=who, text=text,
                reply_to=reply_to, opening=start, refusing=refusing,
            )  # fmt: skip
            queued: Item | str | None = None
            if admitted.seq is not None:
                ours = message_id is None
                said = Item(mid, who, [text], start, ours, reply_to=reply_to, seq=admitted.seq)
                queued = await self._queue(room, lane, said)
        if admitted.known is not None:
            known = admitted.known
            replay = replayed(self.ledger, self._lanes.get(room.key), known, wait=wait)
            try:
                return await asyncio.wait_for(replay, timeout)
            except TimeoutError:
                return PostResult(room.key, known.message_id, "queued", lane.policy, [], True)
        if admitted.refused:  # the room answers (reject): not remembered, a retry posts it
            status = (await room.status()).to_dict()
            return PostResult(room.key, mid, "rejected", lane.policy, room=status)
        if not wait:
            return PostResult(room.key, mid, "queued", lane.policy)
        if not isinstance(queued, Item):  # joined a message another replica runs
            got = await ledger_result(self.ledger, room.key, keys[-1], timeout)
            if got is None and await self.ledger.get(room.key, keys[-1]) is None:
                raise RoomBusyError(  # forgotten with the message it joined, whose run failed
                    f"the message {queued} this one joined in {room.key} could not be answered; "
                    "send it again"
                )
            return got or PostResult(room.key, mid, "queued", lane.policy)
        item = queued
        try:
            first = await asyncio.wait_for(asyncio.shield(item.done), timeout)
        except TimeoutError:
            return PostResult(room.key, mid, "queued", lane.policy)
        return first if item.message_id == mid else first.as_merged(mid)

    async def _queue(self, room: Room, lane: Lane, item: Item) -> Item | str:
        """Put a claimed message in the lane, or join it to the waiting one it coalesces
        with (that one's item, or its id when another replica holds it). A reply keeps its
        own text: joined to another, what it answers would be lost."""
        if lane.policy == "coalesce" and not item.start and item.reply_to is None:
            mid, text, window = item.message_id, item.text, room.settings.coalesce_window
            target = await self.queue.coalesce(room.key, mid, item.author, text, window)
            if target is not None:
                local = lane.queued(target)
                if local is None:
                    return target
                local.texts.append(text)
                local.merged.append(mid)
                local.last_at = time.monotonic()
                return local
        lane.push(item)
        return item

    async def _resume(self) -> None:
        entries: dict[tuple[str, str], Entry] = {}
        for orphan in await self.ledger.take_orphans():  # oldest first: a message's first row
            entries.setdefault((orphan.session, orphan.message_id), orphan)
        for (session, _), entry in entries.items():  # oldest first, one per message
            async with self._arrivals.setdefault(session, asyncio.Lock()):
                await self._adopt(entry)

    async def _adopt(self, entry: Entry) -> None:
        """Queue ``entry`` unless a lane here holds it already (running, or waiting)."""
        lane = self._lanes.get(entry.session)
        held = [*lane.waiting(), lane.settling] if lane is not None else []
        if any(i and entry.message_id in (i.message_id, *i.merged) for i in held):
            return
        rows = await self.ledger.by_message(entry.session, entry.message_id)
        if not any(row.state in ("queued", "running") for row in rows):
            return  # answered, or joined to another message, since the sweep read it
        try:
            room = await self.session(entry.session)
        except InputError as exc:  # its scenario left the project, or its room never began
            # Forgotten, as a failed run is: left queued, it would hold up its room's queue.
            log.warning("queued %s of %s not run: %s", entry.message_id, entry.session, exc)
            await self.ledger.forget(entry.session, entry.message_id)
            return
        parts = await self.ledger.merged_into(entry.session, entry.message_id)
        # Whether the id was the gateway's own is not kept: as a client id, it is still found
        # stored under the id itself (a log's older form), or in the clients' namespace.
        said = Item(entry.message_id, entry.author, [entry.text], entry.opening)
        said.reply_to, said.seq = entry.reply_to, entry.seq
        said.merged = list(dict.fromkeys(p.message_id for p in parts))
        self._lane(room).push(said)

    # -- plumbing ----------------------------------------------------------------------------

    def _lane(self, room: Room) -> Lane:
        lane = self._lanes.get(room.key)
        if lane is None or lane.room is not room:
            settled = functools.partial(settle, self.ledger)
            lane = Lane(room, self.listeners.emit, settled, self.queue)
            self._lanes[room.key] = lane
        return lane
