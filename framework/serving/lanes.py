"""One lane per session: the messages this process accepted for it, run one at a time, in the
ledger's order.

A lane is where the double-texting policy acts. Turns of one room never interleave (one run at
a time, through :class:`Room`'s own locks too); lanes of different rooms run in parallel. What
other processes or replicas accepted for the same room is in the ingest ledger: a message
starts only when no older one of its room waits anywhere, and a newer one posted elsewhere
interrupts it (:mod:`framework.serving.room_queue`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from framework.errors import RoomLeasedError
from framework.runtime.accepted import Accepted
from framework.runtime.room import Room
from framework.serving.results import PostResult
from framework.serving.room_queue import RoomQueue, Start
from framework.sessions.entry import is_entry
from framework.sessions.events import Event, posted_as
from framework.sessions.payloads import WaitPayload, payload_of
from framework.sop.remark_answers import REPLY_TO

log = logging.getLogger("staffroom.gateway")

POLL = 0.2
"""Seconds between two looks at the ledger while a message waits for an older one elsewhere
(or a run under ``interrupt`` watches for a newer one)."""

Emit = Callable[[str, Event], None]
Settle = Callable[[str, "Item", PostResult | BaseException], Awaitable[None]]


@dataclass(slots=True)
class Item:
    """A message waiting in a lane (or the room's entry, ``start``)."""

    message_id: str
    """The message's id as its poster knows it: a platform's or an HTTP client's, stored in
    their namespace (``client_event_id``), or the gateway's own (:attr:`own_id`)."""
    author: str
    texts: list[str]
    start: bool = False
    own_id: bool = False
    """The gateway made ``message_id`` (none was sent, or from an ``Idempotency-Key`` by
    hash): no one chose it, so it is the message event's id itself."""
    merged: list[str] = field(default_factory=list)
    """Ids of later messages coalesced into this one."""
    reply_to: str | None = None
    """The id of the session's event this message replies to (its ``meta.reply_to``)."""
    seq: int = 0
    """Its place in the ingest ledger's order (0: the room's bare entry, in no ledger)."""
    last_at: float = field(default_factory=time.monotonic)
    done: asyncio.Future[PostResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once its run has logged the room's entry, or has ended (entered or not)."""

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


class Lane:
    """The queue and worker of one session."""

    def __init__(self, room: Room, emit: Emit, settle: Settle, queue: RoomQueue) -> None:
        self.room = room
        self.items: list[Item] = []
        """Waiting, by ledger order."""
        self.current: Item | None = None
        self.settling: Item | None = None
        """The item whose run ended and whose result is being recorded."""
        self._emit = emit
        self._settle = settle
        self._queue = queue
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    @property
    def policy(self) -> str:
        """The scenario's double-texting policy."""
        return self.room.settings.double_texting

    @property
    def busy(self) -> bool:
        """A run is under way, or messages wait for one."""
        return self.current is not None or bool(self.items)

    def queued(self, message_id: str) -> Item | None:
        """The waiting (not started) item of ``message_id``, if this lane holds it."""
        return next((i for i in self.items if i.message_id == message_id), None)

    def waiting(self) -> list[Item]:
        """The item running now, then the queued ones."""
        return ([self.current] if self.current is not None else []) + list(self.items)

    def holding(self, message_id: str) -> Item | None:
        """The running or queued item of ``message_id`` (its own, or one merged into it)."""
        return next((i for i in self.waiting() if message_id in (i.message_id, *i.merged)), None)

    def push(self, item: Item) -> None:
        """Queue ``item`` in ledger order; under ``interrupt`` the run under way stops at its
        next turn."""
        at = len(self.items)
        while at and self.items[at - 1].seq > item.seq:
            at -= 1
        self.items.insert(at, item)
        if self.current is not None and self.policy == "interrupt" and not item.start:
            self.room.interrupt()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._work(), name=f"lane {self.room.key}")

    async def wait_idle(self, *, closing: bool = False) -> None:
        """Until every queued message has run; ``closing``: those still waiting for an older
        message another replica holds are handed back to the shared queue instead."""
        self._closing = self._closing or closing
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _work(self) -> None:
        while self.items:
            head = self.items[0]
            window = self.room.settings.coalesce_window if self.policy == "coalesce" else None
            if window is not None and not head.start:
                # Hold the message for the window after its latest part: more may join.
                wait = head.last_at + window - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
            if head.texts and not await self._begin(head, None if head.start else window):
                continue
            self.items.remove(head)  # not popped: an adopted older item may sit before it
            self.current = head
            try:
                outcome: PostResult | BaseException = await self._run(head)
            except Exception as exc:  # settled on the item: its poster sees it, not the lane
                outcome = exc
            finally:
                self.current = None
            await self._settled(head, outcome)

    async def _begin(self, head: Item, window: float | None) -> bool:
        """Whether ``head`` runs now (the ledger marked it running); False after a pause when
        an older message of the room waits elsewhere, or when it left the lane."""
        start: Start | None = None
        try:
            start = await self._queue.begin(self.room.key, head.message_id, window=window)
        except Exception as exc:  # the ledger out of reach: the runs wait for it
            log.warning("cannot start %s in %s yet: %s", head.message_id, self.room.key, exc)
        if start is None or start.go == "wait":
            if self._closing:  # the replica stops: what waits here goes back to the queue
                for item in list(self.items):
                    self.items.remove(item)
                    gone = RoomLeasedError(f"{self.room.key}: handed back as this replica stops")
                    await self._settled(item, gone)
                return False
            await asyncio.sleep(POLL if start is not None else POLL * 5)
            return False
        if start.go == "answered":  # by another replica, or joined to a message one runs
            self.items.remove(head)
            head.entered.set()
            if not head.done.done():
                head.done.set_result(start.answer(self.room.key, head.message_id, self.policy))
            return False
        if window is not None and start.text:  # parts joined on other replicas are there
            # (no text: the ledger forgot the message, and the lane's own text runs)
            head.texts, head.merged = [start.text], start.merged
        return True

    async def _settled(self, item: Item, outcome: PostResult | BaseException) -> None:
        item.entered.set()  # whatever happened: nobody waits for an entry for ever
        # Held while its result is written: a sweep must not take it for a dropped one.
        self.settling = item
        try:
            await self._settle(self.room.key, item, outcome)
        finally:
            self.settling = None

    async def _run(self, item: Item) -> PostResult:
        room, events = self.room, []
        if not item.texts:  # the room's bare entry (no first message was given)
            stream = room.start()
        else:  # a person's message; the room's first one opens it (Room.post says so)
            meta: dict[str, Any] = {"merges": item.merged} if item.merged else {}
            if item.reply_to is not None:
                meta[REPLY_TO] = item.reply_to
            own, mid = item.own_id, item.message_id
            stream = room.post(
                Accepted(item.author, item.text),  # each text accepted before it was queued
                message_id=mid if own else None,
                client_id=None if own else mid,
                meta=meta or None,
            )
        watch = None
        if self.policy == "interrupt" and item.seq:
            watch = asyncio.create_task(self._watch(item), name=f"interrupt watch {room.key}")
        try:
            async for event in stream:
                events.append(event)
                self._emit(room.key, event)
                if is_entry(event):
                    item.entered.set()
        finally:
            if watch is not None:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch
        if item.texts and not (events and posted_as(events[0], item.message_id, item.author)):
            # Stored and (partly) answered before a restart: the result is all of it.
            events = _since(room.history(), item) or events
        last = events[-1] if events else None
        paused = payload_of(last) if last is not None else None
        stopped = isinstance(paused, WaitPayload) and paused.reason == "interrupted"
        return PostResult(
            session=room.key,
            message_id=item.message_id,
            status="interrupted" if stopped else "done",
            policy=self.policy,
            events=events,
        )

    async def _watch(self, item: Item) -> None:
        """Interrupt the run of ``item`` once a newer message waits in the ledger (posted to
        another replica: one posted here interrupts at once, in :meth:`push`)."""
        while True:
            await asyncio.sleep(POLL)
            try:
                if await self._queue.newer(self.room.key, item.message_id, item.seq):
                    self.room.interrupt()
                    return
            except Exception as exc:  # the ledger out of reach: the run goes on
                log.warning("cannot look for newer messages in %s: %s", self.room.key, exc)


def _since(history: list[Event], item: Item) -> list[Event]:
    """The message of ``item`` and what followed it until the next person's message (empty
    when the log does not hold it)."""
    for index, event in enumerate(history):
        if posted_as(event, item.message_id, item.author):
            rest = history[index + 1 :]
            end = next((i for i, e in enumerate(rest) if e.from_person), len(rest))
            return [event, *rest[:end]]
    return []
