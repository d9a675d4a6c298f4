"""The adapter interface, and the bridge that joins a chat platform to the gateway.

A platform adapter (``slack.py``, ``feishu.py``) does three platform things: check that a
request really comes from the platform (:class:`Unverified` when not), read it as a
:class:`Challenge` or an :class:`Inbound` message, and send a reply as an employee. The
:class:`Bridge` does the rest the same way for every platform:

- in: an :class:`Inbound` message is mapped to its session (``mapping.py``) and posted with
  ``Gateway.post(..., message_id=<platform id>, wait=False)``: the platform's redelivery of
  it is a duplicate the gateway answers without storing or running anything;
- out: as the gateway's listener, every employee message of a session this platform serves
  is sent to the place the session maps to, as that employee, and the room's remark notices
  by the shared app (``outgoing.py``); other system events and people's messages are not;
- replies: a message replying to a platform message is posted with ``reply_to`` naming the
  event that message carried (``outgoing.py`` keeps the record), so a yes replying to an
  understood remark confirms it;
- echoes: a message our own apps sent (by sender identity, or by the id the platform gave
  our send) never reaches a room again, or employees would answer themselves forever;
- bot loops: another bot's message reaches the room like a person's, but once the room's
  employees have sent the scenario's ``max_turns`` messages since a person last spoke there,
  bot messages are ignored until a person speaks (the same budget a room gives its
  employees per human message).

What a platform sends is read into typed models by :func:`read_json` (a malformed callback
is an ``InputError``, answered 400, never a crash), and what one message becomes in a room
is at most :data:`MAX_TEXT` characters (:func:`bounded`, :func:`expand`).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ValidationError

from framework.errors import InputError, StaffroomError
from framework.runtime.room import Room
from framework.serving.gateway import Gateway
from framework.sessions.events import Event
from framework.surfaces.adapters.mapping import GroupMapping, Place, Target
from framework.surfaces.adapters.outgoing import Outgoing, outgoing, replied_event
from framework.surfaces.adapters.recent_ids import RecentIds
from framework.surfaces.server.limits import MESSAGE_CHARS

log = logging.getLogger("staffroom.adapters")

OUTBOX = 1000
"""Replies waiting for the platform; past this a reply is dropped (logged), rooms go on."""

ACK_WITHIN = 2.0
"""Seconds a webhook waits for its message to be accepted before answering 200 anyway
(Slack and Feishu give up on an answer after 3 seconds and send the event again)."""

MAX_TEXT = MESSAGE_CHARS
"""Characters one platform message may become in a room, mentions expanded: the limit of a
message posted over the HTTP API, so a message holds as much whichever way it came. A longer
one keeps its first characters and ends with :data:`CUT_NOTE` (truncated, not refused: the
person who wrote it is in a chat, and a refusal there would be silence), so the room and the
employee reading it can tell that the rest was not kept."""

CUT_NOTE = "\n[… cut here: the message was longer than {limit:,} characters]"

_Model = TypeVar("_Model", bound=BaseModel)


def read_json(
    model: type[_Model], data: str | bytes, *, what: str, fix: str, at: tuple[str, ...] = ()
) -> _Model:
    """``data`` (a JSON text, found at the path ``at``) read as ``model``, else
    :class:`InputError` naming the field.

    pydantic's own JSON parser reads it: nesting past 200 levels, bytes that are not UTF-8
    and lone surrogates are malformed JSON like any other (``json.loads`` raises
    ``RecursionError`` on deep nesting, and passes lone surrogates that cannot be stored).
    """
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise _malformed(exc, what, fix, at) from None


def read_data(
    model: type[_Model], data: object, *, what: str, fix: str, at: tuple[str, ...] = ()
) -> _Model:
    """Parsed JSON ``data`` (found at the path ``at``) read as ``model``, else
    :class:`InputError` naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _malformed(exc, what, fix, at) from None


def _malformed(exc: ValidationError, what: str, fix: str, at: tuple[str, ...]) -> InputError:
    # The message names the field and the rule, never the value: the caller may be anyone.
    first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
    where = ".".join((*at, *(str(part) for part in first["loc"]))) or "body"
    return InputError(f"{what}: {where}: {first['msg']}", field=where, fix=fix)


def bounded(text: str, *, limit: int = MAX_TEXT) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and :data:`CUT_NOTE`
    (``limit`` characters in all)."""
    if len(text) <= limit:
        return text
    note = CUT_NOTE.format(limit=limit)
    log.warning("a platform message of over %d characters was cut to %d", limit, limit)
    return text[: limit - len(note)] + note


def expand(text: str, pattern: re.Pattern[str], names: Mapping[str, str]) -> str:
    """``text`` with each match of ``pattern`` that ``names`` knows replaced by its name, in
    one pass and at most :data:`MAX_TEXT` characters (see :func:`bounded`).

    One pass: a name is never searched again, so a name holding another mention's key (or
    an empty key, which ``str.replace`` finds between every two characters) cannot multiply
    the text. The pattern is fixed, so the cost is linear in the text, however many names.
    """
    parts: list[str] = []
    size = start = 0
    for match in pattern.finditer(text):
        name = names.get(match.group())
        if name is None:
            continue
        parts += [text[start : match.start()], name]
        size += match.start() - start + len(name)
        start = match.end()
        if size > MAX_TEXT:  # the rest would be cut anyway: build no more of it
            return bounded("".join(parts))
    parts.append(text[start:])
    return bounded("".join(parts))


def unix_time(stamp: str) -> int | None:
    """A timestamp header as seconds, None unless it is 1 to 12 ASCII digits (``int()``
    raises on the 4,301st digit, and no clock needs a 13th)."""
    return int(stamp) if 0 < len(stamp) <= 12 and stamp.isascii() and stamp.isdigit() else None


def same_secret(expected: str, given: str) -> bool:
    """Constant-time comparison of two secrets as bytes (a str compare raises on non-ASCII
    input, which an attacker controls: that must be a 401, not a 500)."""
    return hmac.compare_digest(expected.encode(), given.encode())


class Unverified(InputError):
    """A request the platform did not sign (bad or missing signature, token, or timestamp)."""


class PlatformError(StaffroomError):
    """A chat platform refused a call (the message names the call, its code and text)."""


@dataclass(frozen=True, slots=True)
class Challenge:
    """A platform checking the webhook URL: answer ``{"challenge": value}``."""

    value: str


@dataclass(frozen=True, slots=True)
class Inbound:
    """A platform message, verified and read, on its way to a session."""

    message_id: str
    """The platform's id for it (the same on every redelivery): the gateway's dedup key."""
    text: str
    """With platform mentions of employees rewritten as ``@<employee id>``."""
    sender: str
    """The platform user (or bot) id."""
    author: str
    """The name the room knows the sender by (``users`` mapping, else the id)."""
    place: Place
    root: str | None = None
    """The message's own id as a thread root (Slack ``ts``, Feishu ``message_id``)."""
    parent: str | None = None
    """The platform id of the message it replies to (Slack's thread, Feishu's parent)."""
    scope: tuple[str, ...] = ()
    """Ids before the group's in a room id (Slack: the team)."""
    from_bot: bool = False
    """Sent by a bot (an app), not a person."""
    from_us: bool = False
    """Sent by one of our own apps: an echo of a reply."""
    employee: str | None = None
    """The employee whose own app received it (answers it when it is a DM)."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """What became of an inbound message (the webhook's answer body says it)."""

    outcome: str
    """``posted`` (accepted durably; replies follow), ``duplicate`` (a redelivery: nothing
    done), ``rejected`` (the room is busy under policy ``reject``), ``ignored`` (echo,
    unmapped group, no text, bot turn budget spent), ``invalid`` (the room refused it, see
    ``reason``) or ``pending`` (still being accepted when the platform needed its answer)."""
    session: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {"ok": True, "outcome": self.outcome, "session": self.session, "reason": self.reason}


class ChatAdapter(ABC):
    """One chat platform: verify and read its webhooks, send replies as employees."""

    platform: ClassVar[str]
    mapping: GroupMapping

    @abstractmethod
    def read(self, headers: Mapping[str, str], body: bytes) -> Challenge | Inbound | None:
        """The request as a challenge, a message, or None (an event we do not handle).

        Raises :class:`Unverified` when the platform did not sign it, ``InputError`` when it
        is not the platform's JSON.
        """

    @abstractmethod
    async def send(self, place: Place, employee: str, name: str, text: str, *, uid: str) -> str:
        """Send ``text`` to ``place`` as ``employee`` (shown as ``name``); returns the id the
        platform gave the message. ``uid`` is unique per reply (platforms that dedupe
        sends use it)."""

    async def scope(self) -> tuple[str, ...]:
        """The ids before a group's in this platform's room ids (Slack: the team)."""
        return ()


class Bridge:
    """One platform adapter joined to the gateway (see the module docstring)."""

    def __init__(self, gateway: Gateway, adapter: ChatAdapter, *, ack_within: float = ACK_WITHIN):
        self.gateway = gateway
        self.adapter = adapter
        self.ack_within = ack_within
        self._sent = RecentIds()
        """Platform ids of the messages we sent (their echoes are ignored)."""
        self._replied = RecentIds()
        """Event ids already sent (a listener never sends one reply twice)."""
        self._bot_turns: dict[str, int] = {}
        """Employee messages per session since a person last spoke there."""
        self._tasks: set[asyncio.Task[Delivery]] = set()
        self._outbox: asyncio.Queue[tuple[Place, Event, Outgoing]] = asyncio.Queue(OUTBOX)
        self._sender: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Send the employees' replies from now on (register as the gateway's listener)."""
        if self._sender is None:
            self._sender = asyncio.create_task(
                self._send_replies(), name=f"{self.adapter.platform} replies"
            )
            self.gateway.add_listener(self.on_event)

    async def accept(self, inbound: Inbound) -> Delivery:
        """Post ``inbound`` to its session; answers within ``ack_within`` seconds."""
        if inbound.from_us or inbound.message_id in self._sent:
            return Delivery("ignored", reason="our own message (an echo)")
        if not inbound.text.strip():
            return Delivery("ignored", reason="no text")
        mapping = self.adapter.mapping
        try:
            target = mapping.target(
                inbound.place,
                inbound.sender,
                scope=inbound.scope,
                root=inbound.root,
                author=inbound.author,
                employee=inbound.employee,
            )
        except InputError as exc:  # ids no session key can hold: sending again cannot help
            log.warning("message %s refused: %s", inbound.message_id, exc.message)
            return Delivery("invalid", reason=exc.message)
        if target is None:
            why = "no dm_employee answers DMs" if inbound.place.direct else "group not mapped"
            return Delivery("ignored", reason=why)
        task = asyncio.create_task(self._post(target, inbound), name=f"post {target.key}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        done, _ = await asyncio.wait({task}, timeout=self.ack_within)
        return task.result() if done else Delivery("pending", target.key)

    async def _post(self, target: Target, inbound: Inbound) -> Delivery:
        try:
            room = await self._open(target)
            if inbound.from_bot:
                budget = room.settings.max_turns
                if self._bot_turns.get(target.key, 0) >= budget:
                    why = f"bot message after {budget} employee turns (max_turns) without a person"
                    log.info("%s: ignored %s: %s", target.key, inbound.message_id, why)
                    return Delivery("ignored", target.key, why)
            else:
                self._bot_turns[target.key] = 0
            result = await self.gateway.post(
                target.key,
                inbound.text,
                author=inbound.author,
                message_id=inbound.message_id,
                reply_to=await replied_event(self.gateway, target.key, inbound.parent),
                wait=False,
            )
        except InputError as exc:
            # Sending it again cannot help (a bad scenario id, an author the name rule
            # refuses): answered 200 so the platform stops, and logged for the operator.
            log.warning("%s: message %s refused: %s", target.key, inbound.message_id, exc)
            return Delivery("invalid", target.key, exc.message)
        if result.duplicate:
            return Delivery("duplicate", result.session)
        if result.status == "rejected":
            return Delivery("rejected", result.session, "the room is busy (policy reject)")
        return Delivery("posted", result.session)

    async def _open(self, target: Target) -> Room:
        if target.room_id is not None and target.scenario is not None:
            # The message that opens a room is its first message: the room enters with it
            # (posted next), so its first step works on it, not on nothing.
            return await self.gateway.open_room(target.room_id, target.scenario, start=False)
        if target.employee is None or target.user is None:
            raise InputError("a DM needs an employee and a person", field="dm_employee")
        return await self.gateway.open_dm(target.employee, target.user)

    def _finished(self, task: asyncio.Task[Delivery]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("posting a platform message failed", exc_info=task.exception())

    async def on_event(self, key: str, event: Event) -> None:
        """Send what goes out of a session this platform serves (the gateway's listener)."""
        place = None if event.from_person else self.adapter.mapping.place_of(key)
        if place is not None:
            await self.send_to(place, key, event)

    async def send_to(self, place: Place, key: str, event: Event) -> None:
        """Send ``event`` of session ``key`` to ``place`` (once; what goes out, and as what,
        is outgoing()'s to say): a scheduled fire's replies go where its schedule says."""
        if event.from_person or event.id in self._replied:
            return
        out = outgoing(event, await self.gateway.session(key))
        if out is None:
            return
        self._replied.add(event.id)
        if not out.notice:
            self._bot_turns[key] = self._bot_turns.get(key, 0) + 1
        try:
            # Queued, not sent here: a slow platform must not hold up the other listeners.
            self._outbox.put_nowait((place, event, out))
        except asyncio.QueueFull:
            log.error("%s: reply %s not sent: %d replies wait", key, event.id, OUTBOX)

    async def notify(self, place: Place, name: str, text: str, *, uid: str) -> str:
        """Send ``text`` to ``place`` now, as the shared app shown as ``name``; its id."""
        sent = await self.adapter.send(place, "", name, text, uid=uid)
        self._sent.add(sent)  # its echo never reaches a room
        return sent

    async def _send_replies(self) -> None:
        while True:
            place, event, out = await self._outbox.get()
            try:
                sent = await self.adapter.send(
                    place, out.employee, out.name, out.text, uid=event.id
                )
                self._sent.add(sent)
                await self.gateway.ledger.record_sent(event.session, sent, event.id)
            except Exception as exc:  # one failed send must not stop the replies after it
                # One line: a platform that is down or unreachable is an operator's fact, not a
                # bug (a traceback per reply buried the log); the stack is there at debug level.
                log.error(
                    "%s: reply %s not sent: %s: %s",
                    event.session,
                    event.id,
                    type(exc).__name__,
                    exc,
                )
                log.debug("reply %s not sent", event.id, exc_info=True)
            finally:
                self._outbox.task_done()

    async def drain(self) -> None:
        """Wait for messages still being accepted and replies still being sent."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._sender is not None:
            await self._outbox.join()

    async def stop(self) -> None:
        """Drain, then stop sending."""
        await self.drain()
        if self._sender is not None:
            self._sender.cancel()
            self._sender = None
