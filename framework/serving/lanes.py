"""One lane per session: the messages accepted for it, run one at a time, in arrival order.

A lane is where the double-texting policy acts. Turns of one room never interleave (one run at
a time, through :class:`Room`'s own locks too); lanes of different rooms run in parallel.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from framework.runtime.accepted import Accepted
from framework.runtime.room import Room
from framework.serving.results import PostResult
from framework.sessions.entry import is_entry
from framework.sessions.events import Event, posted_as
from framework.sessions.payloads import WaitPayload, payload_of
from framework.sop.remark_answers import REPLY_TO

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

    def __init__(self, room: Room, emit: Emit, settle: Settle) -> None:
        self.room = room
        self.items: deque[Item] = deque()
        self.current: Item | None = None
        self.settling: Item | None = None
        """The item whose run ended and whose result is being recorded."""
        self._emit = emit
        self._settle = settle
        self._task: asyncio.Task[None] | None = None

    @property
    def policy(self) -> str:
        """The scenario's double-texting policy."""
        return self.room.settings.double_texting

    @property
    def answering(self) -> bool:
        """A person's message is being answered or waits (the room's entry does not count)."""
        return any(not item.start for item in self.waiting())

    @property
    def busy(self) -> bool:
        """A run is under way, or messages wait for one."""
        return self.current is not None or bool(self.items)

    def coalesce_target(self, author: str) -> Item | None:
        """The waiting message of ``author`` a new one may join (policy ``coalesce``)."""
        if self.policy != "coalesce" or not self.items:
            return None
        last = self.items[-1]
        window = self.room.settings.coalesce_window
        fresh = time.monotonic() - last.last_at <= window
        alone = last.start or last.reply_to is not None  # a reply answers one thing
        return last if not alone and last.author == author and fresh else None

    def waiting(self) -> list[Item]:
        """The item running now, then the queued ones."""
        return ([self.current] if self.current is not None else []) + list(self.items)

    def holding(self, message_id: str) -> Item | None:
        """The running or queued item of ``message_id`` (its own, or one merged into it)."""
        return next((i for i in self.waiting() if message_id in (i.message_id, *i.merged)), None)

    def push(self, item: Item) -> None:
        """Queue ``item``; under ``interrupt`` the run under way stops at its next turn."""
        self.items.append(item)
        if self.current is not None and self.policy == "interrupt" and not item.start:
            self.room.interrupt()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._work(), name=f"lane {self.room.key}")

    async def wait_idle(self) -> None:
        """Until every queued message has run."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)

    async def _work(self) -> None:
        while self.items:
            head = self.items[0]
            if self.policy == "coalesce" and not head.start:
                # Hold the message for the window after its latest part: more may join.
                wait = head.last_at + self.room.settings.coalesce_window - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
            item = self.items.popleft()
            self.current = item
            try:
                outcome: PostResult | BaseException = await self._run(item)
            except Exception as exc:  # settled on the item: its poster sees it, not the lane
                outcome = exc
            finally:
                self.current = None
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
        async for event in stream:
            events.append(event)
            self._emit(room.key, event)
            if is_entry(event):
                item.entered.set()
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


def _since(history: list[Event], item: Item) -> list[Event]:
    """The message of ``item`` and what followed it until the next person's message (empty
    when the log does not hold it)."""
    for index, event in enumerate(history):
        if posted_as(event, item.message_id, item.author):
            rest = history[index + 1 :]
            end = next((i for i, e in enumerate(rest) if e.from_person), len(rest))
            return [event, *rest[:end]]
    return []
