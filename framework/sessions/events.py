"""Session events: one JSON object per JSONL line.

Every line starts with ``{"id": "...`` so the log can index ids without a full JSON parse; a
line written under a room lease (several replicas) carries the writer's fencing epoch right
after it, ``{"id":"…","epoch":3,"ts":…}``, for the same reason (``log_fence.py`` says why).
Code reads an event's ``content`` as its kind's typed payload with
:func:`framework.sessions.payloads.payload_of`, and finds a run's entry event with
:mod:`framework.sessions.entry`; ``content`` itself stays exactly what the log holds.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from framework.errors import InputError


class EventKind(StrEnum):
    """What an event records."""

    MESSAGE = "message"
    """A human's or an employee's chat message."""
    TOOL_CALL = "tool_call"
    """An employee asked to run a tool (content: ``{"name", "args", "call_id"}``)."""
    TOOL_RESULT = "tool_result"
    """What a tool returned (content: ``{"name", "call_id", "ok", "output"}``)."""
    PLAN = "plan"
    """The room's entry: announcement, chosen SOP and its steps (``meta.entry``).

    Logs from before the kinds below also hold feedback and extractions as ``plan``
    events (content keys ``outcome`` / ``extracted``); readers accept both."""
    SOP_STEP = "sop_step"
    """An SOP step started (content: step number, speaker, what to do)."""
    OUTCOME = "outcome"
    """How a run ended (reason, turns, steps done)."""
    ERROR = "error"
    """A model error, malformed tool call or unknown tool, shown to the model or the user."""
    FALLBACK = "fallback"
    """Something was done another way than asked (content: ``{"what", "used", "reason"}``):
    a shrunk prompt, an extractive summary, the rule reviser, a round-robin pick."""
    WAIT = "wait"
    """The room paused for human input."""
    FEEDBACK = "feedback"
    """A run's measured result against its SOP version (content: ``{"sop", "success",
    "score", "corrections", ...}``), recorded once at the end of an SOP run."""
    REVISION = "revision"
    """The SOP version that run proposed or published (content: ``{"sop", "status", "why",
    "edits", "reviewers"}``)."""
    EXTRACTION = "extraction"
    """A person asked to keep the session's way of working: the SOP draft distilled from it
    (content: ``{"extracted", "status", "steps", "review"}``, ``extracted`` None when none)."""
    KNOWLEDGE = "knowledge"
    """What a session end did in the knowledge layers: journal entries per employee, the
    extraction run (who extracted, the self-check gate's verdict and re-scan), where each item
    went (content: ``{"session", "journals", "by", "gate", "fallbacks", "routed"}``)."""
    SESSION_END = "session_end"
    """The session ended (closed, or idle past ``Settings.session_idle``): content
    ``{"reason", "first", "last", "events"}``; the next message starts a new session."""
    CONSOLIDATION = "consolidation"
    """Pointer: messages up to ``content.through`` are summarised into HISTORY.md / MEMORY.md."""
    REMARK = "remark"
    """A person's free remark read as SOP corrections, shown back in their words (content:
    ``{"status", "by", "text", "corrections", ...}``; status ``understood``, ``confirmed``,
    ``dropped`` or ``none``). Only ``confirmed`` ones count in the run's outcome."""


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a session. Immutable; written once to the JSONL log."""

    id: str
    """Unique id. A replayed append of an existing id is skipped."""
    ts: str
    """UTC timestamp, ISO 8601 with milliseconds and ``Z``."""
    session: str
    """Session key ``{channel}:{chat_id}``."""
    kind: EventKind
    author: str
    """A user name, an employee id, or ``system``."""
    content: Any
    """Text for messages; a dict for tool calls, results, plans and outcomes."""
    text_offsets: list[int] | None = None
    """For a turn that mixes text and tool calls: where each tool call sat in the text."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Why this happened: ``why`` (sop_step | mention | selector), ``sop``, ``step``, ``model``."""
    epoch: int = 0
    """The fencing epoch of the room lease its writer held (``JsonlLog.fence``); 0 when
    written without one (a single process, SQLite mode, logs from before leases)."""

    def to_json(self) -> str:
        """Serialise to one JSON line (no newline), ``id`` first."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    def to_dict(self) -> dict[str, Any]:
        """The event as plain JSON data (what a log line, an HTTP body or a stream holds)."""
        data: dict[str, Any] = {"id": self.id}
        if self.epoch:  # right after the id: the log's id index reads both with one regex
            data["epoch"] = self.epoch
        data |= {
            "ts": self.ts,
            "session": self.session,
            "kind": str(self.kind),
            "author": self.author,
            "content": self.content,
        }
        if self.text_offsets is not None:
            data["text_offsets"] = self.text_offsets
        if self.meta:
            data["meta"] = self.meta
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Event:
        """Build from a parsed JSON object; raises ``KeyError``/``ValueError`` when malformed."""
        offsets = data.get("text_offsets")
        epoch = data.get("epoch", 0)
        if type(epoch) is not int or epoch < 0:  # not a bool, a float or a string
            raise ValueError(f"epoch must be a whole number >= 0, got {epoch!r}")
        return cls(
            id=str(data["id"]),
            ts=str(data["ts"]),
            session=str(data["session"]),
            kind=EventKind(data["kind"]),
            author=str(data["author"]),
            content=data["content"],
            text_offsets=[int(x) for x in offsets] if offsets is not None else None,
            meta=dict(data.get("meta") or {}),
            epoch=epoch,
        )

    @property
    def from_person(self) -> bool:
        """Whether a person (not an employee or the system) posted it (``meta.human``)."""
        return bool(self.meta.get("human"))

    @property
    def text(self) -> str:
        """The content as display text."""
        if isinstance(self.content, str):
            return self.content
        return json.dumps(self.content, ensure_ascii=False)


def utc_now() -> str:
    """Current UTC time as ``2026-11-30T09:14:03.512Z``."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_event_id() -> str:
    """A ULID-like id: 48-bit milliseconds + 80 random bits, Crockford base32, sortable."""
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        value, rem = divmod(value, 32)
        chars.append(_CROCKFORD[rem])
    return "".join(reversed(chars))


CLIENT_EVENT_PREFIX = "client-"
"""Event ids of messages posted with an id from outside start with this (see
:func:`client_event_id`); no id the runtime makes does."""


def client_event_id(client_id: str) -> str:
    """The event id a message posted with the outside id ``client_id`` is stored under.

    A platform's or an HTTP client's message id is chosen by someone else, so it must never
    be an event id itself: ``<epoch>-entry`` or the predictable id of a later reply
    (``<epoch>-t0002-msg``) would make the room skip its own event as already written. The
    id is ``client-`` and 32 hex digits of the client id's SHA-256: the same client id
    always maps to the same event (redeliveries stay harmless), no id the runtime makes has
    this form, and the ids it derives from a message's (``<id>-remark``, ...) are longer, so
    no client id can land on them either. The client's own id is kept in the event's
    ``meta.client_id``.
    """
    digest = hashlib.sha256(client_id.encode("utf-8", "surrogatepass")).hexdigest()
    return CLIENT_EVENT_PREFIX + digest[:32]


def posted_as(event: Event, client_id: str, author: str) -> bool:
    """Whether ``event`` is ``author``'s message posted with the id ``client_id``.

    Such a message is stored under :func:`client_event_id`, or under the id itself: an id
    no one chose (the gateway's own), or any id in a log written before client ids had
    their own namespace. The second form counts for the same author only: anyone can read
    another person's event id and send it as theirs.
    """
    if event.kind != EventKind.MESSAGE or not event.from_person:
        return False
    if event.id == client_event_id(client_id):
        return True
    return event.id == client_id and event.author == author and "client_id" not in event.meta


def client_message_id(client_id: str, author: str, stored: Event | None) -> str:
    """The id ``author``'s message posted with the outside id ``client_id`` goes under:
    :func:`client_event_id`, unless ``stored`` (the log's event whose id is ``client_id``
    itself, if any) is that very message, stored so by a log from before (see
    :func:`posted_as`). Any other event with that id (the room's entry, a reply) is no
    business of this message."""
    if stored is not None and posted_as(stored, client_id, author):
        return client_id
    return client_event_id(client_id)


OPENING_ID_PREFIX = "opening-"
"""Ids of a room's first message given at its start (``Room.start(message=...)``)."""


def opening_message_id(session: str, author: str, text: str) -> str:
    """The id of the first message ``author`` gives ``session`` at its start: derived from
    all three, so starting the room again with the same message never posts it twice (a
    different message is a different one)."""
    key = "\0".join((session, author, text))
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return OPENING_ID_PREFIX + digest[:24]


def check_own_id(found: Event | None, session: str) -> None:
    """Refuse a caller's own message id when ``found``, the event already stored under it,
    is not a person's message (an id that is the room's entry or a reply names no message
    that could be delivered again)."""
    if found is not None and not (found.kind == EventKind.MESSAGE and found.from_person):
        raise InputError(
            f"message id '{found.id[:80]}' is the id of another event of {session}",
            field="message_id",
            fix="give messages ids of their own; pass an outside id as client_id",
        )


def make_event(
    session: str,
    kind: EventKind,
    author: str,
    content: Any,
    *,
    id: str | None = None,
    meta: dict[str, Any] | None = None,
    text_offsets: list[int] | None = None,
) -> Event:
    """Create an event stamped now, with a fresh id unless one is given."""
    return Event(
        id=id or new_event_id(),
        ts=utc_now(),
        session=session,
        kind=kind,
        author=author,
        content=content,
        text_offsets=text_offsets,
        meta=dict(meta or {}),
    )
