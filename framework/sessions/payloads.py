"""Typed payloads: one frozen dataclass per :class:`EventKind`, read by :func:`payload_of`.

An event's ``content`` stays what the log holds (text, or a JSON object), so the JSONL bytes
and the event ids never change; readers go through :func:`payload_of` instead of
``content.get(...)``. Reading is lenient, as the log readers always were: logs from earlier
versions lack keys written later and hold keys no payload names, so a missing key (or a
value of the wrong JSON type) reads as the field's default and the whole object stays in
``raw``. The reader never raises on an event's content.

Old logs also hold feedback and extractions as ``plan`` events (content keys ``outcome`` /
``extracted``); :func:`payload_of` reads those as the ``plan`` payload, and
:func:`framework.sessions.entry.is_entry` tells the room's entry (``meta.entry``) from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from framework.sessions.events import Event, EventKind

_EMPTY: Mapping[str, Any] = {}


class _Read:
    """Lenient typed reads of one JSON object (a key of the wrong type reads as missing)."""

    def __init__(self, content: object) -> None:
        self.c: Mapping[str, Any] = content if isinstance(content, dict) else _EMPTY

    def str_(self, key: str) -> str | None:
        value = self.c.get(key)
        return value if isinstance(value, str) else None

    def int_(self, key: str) -> int | None:
        value = self.c.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def num(self, key: str) -> float | None:
        value = self.c.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    def bool_(self, key: str) -> bool:
        return bool(self.c.get(key))

    def list_(self, key: str) -> list[Any]:
        value = self.c.get(key)
        return list(value) if isinstance(value, list) else []

    def strs(self, key: str) -> list[str]:
        return [str(v) for v in self.list_(key)]

    def dict_(self, key: str) -> Mapping[str, Any]:
        value = self.c.get(key)
        return value if isinstance(value, dict) else _EMPTY


@dataclass(frozen=True, slots=True)
class MessagePayload:
    """``message``: a person's or an employee's chat text."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallPayload:
    """``tool_call``: an employee asked to run a tool."""

    name: str | None
    args: Mapping[str, Any]
    call_id: str | None
    protocol: str | None
    """Set when the call was asked for as a JSON answer (models/json_tools.py)."""
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ToolResultPayload:
    """``tool_result``: what a tool returned, and what shaped the model's view of it."""

    name: str | None
    call_id: str | None
    ok: bool
    output: str
    has_budget: bool
    """Whether the output budget was logged (logs from before it replay differently)."""
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class EntryPayload:
    """``plan``: the room's entry (announcement, scenario, SOP); in old logs also feedback
    (``outcome``) or an extraction (``extracted``) written under this kind."""

    scenario: str | None
    scenario_source: str | None
    title: str | None
    announcement: str | None
    sop: str | None
    participants: list[str]
    humans: list[str]
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class StepPayload:
    """``sop_step``: an SOP step started (the step as the checkpoint keeps it)."""

    number: int | None
    """The step's 1-based number as people see it (``n`` in the log)."""
    speakers: list[str]
    do: str | None
    produces: list[str]
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class OutcomePayload:
    """``outcome``: how a run ended."""

    reason: str | None
    sop: str | None
    steps_done: int | None
    steps_total: int | None
    turns: int | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ErrorPayload:
    """``error``: a model error, malformed tool call or unknown tool."""

    error: str | None
    detail: str | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class FallbackPayload:
    """``fallback``: something was done another way than asked."""

    what: str | None
    used: str | None
    reason: str | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class WaitPayload:
    """``wait``: the room paused for a person."""

    waiting_for: list[str]
    reason: str | None
    after_step: int | None
    error: str | None
    dropped: list[str]
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class FeedbackPayload:
    """``feedback``: a run's measured result (or a late amendment, or a notice that a late
    message did not count)."""

    sop: str | None
    success: bool
    score: float | None
    corrections: int | None
    """How many corrections the run (or its late amendment) counted."""
    at: str | None
    """When the run's outcome was stored (absent in logs from before late feedback)."""
    reason: str | None
    people: list[str]
    late: bool
    raw: Mapping[str, Any] = field(repr=False)

    @property
    def has_at(self) -> bool:
        """Whether the run's stored outcome can be found (late feedback needs ``at``)."""
        return "at" in self.raw


@dataclass(frozen=True, slots=True)
class RevisionPayload:
    """``revision``: the SOP version a run proposed or published."""

    sop: str | None
    status: str | None
    why: str | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ExtractionPayload:
    """``extraction``: the SOP draft distilled from a session (``extracted`` None if none)."""

    extracted: str | None
    status: str | None
    steps: list[str]
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class KnowledgePayload:
    """``knowledge``: what a session end did in the knowledge layers."""

    session: str | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class SessionEndPayload:
    """``session_end``: the session ended; the next message starts a new one."""

    reason: str | None
    first: str | None
    last: str | None
    events: int | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ConsolidationPayload:
    """``consolidation``: messages up to ``through`` are summarised into the memory files."""

    through: str | None
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class RemarkPayload:
    """``remark``: a person's free remark read as SOP corrections, or its settlement."""

    status: str | None
    by: str | None
    text: str | None
    ask: str | None
    english: bool
    number: int | None
    """The remark's number in its run (1, 2, ...)."""
    understood: str | None
    """For a confirmation or a drop: the id of the understood remark it settles."""
    remark: str | None
    """The id of the message the remark was read from."""
    told: str | None
    corrections: list[Any] | None
    """The corrections read (dicts); None when the event holds none."""
    raw: Mapping[str, Any] = field(repr=False)


Payload = (
    MessagePayload
    | ToolCallPayload
    | ToolResultPayload
    | EntryPayload
    | StepPayload
    | OutcomePayload
    | ErrorPayload
    | FallbackPayload
    | WaitPayload
    | FeedbackPayload
    | RevisionPayload
    | ExtractionPayload
    | KnowledgePayload
    | SessionEndPayload
    | ConsolidationPayload
    | RemarkPayload
)
"""Any event's typed payload; ``isinstance`` tells which (the event's kind decides)."""


def _tool_result(r: _Read) -> Payload:
    output = r.c.get("output")
    text = output if isinstance(output, str) else "" if output is None else str(output)
    return ToolResultPayload(
        r.str_("name"), r.str_("call_id"), r.bool_("ok"), text, "budget" in r.c, r.c
    )


def _remark(r: _Read) -> Payload:
    return RemarkPayload(
        status=r.str_("status"),
        by=r.str_("by"),
        text=r.str_("text"),
        ask=r.str_("ask"),
        english=r.bool_("english"),
        number=r.int_("number"),
        understood=r.str_("understood"),
        remark=r.str_("remark"),
        told=r.str_("told"),
        corrections=r.list_("corrections") if "corrections" in r.c else None,
        raw=r.c,
    )


_READERS: dict[EventKind, Callable[[_Read], Payload]] = {
    EventKind.TOOL_CALL: lambda r: ToolCallPayload(
        r.str_("name"), r.dict_("args"), r.str_("call_id"), r.str_("protocol"), r.c
    ),
    EventKind.TOOL_RESULT: _tool_result,
    EventKind.PLAN: lambda r: EntryPayload(
        scenario=r.str_("scenario"),
        scenario_source=r.str_("scenario_source"),
        title=r.str_("title"),
        announcement=r.str_("announcement"),
        sop=r.str_("sop"),
        participants=r.strs("participants"),
        humans=r.strs("humans"),
        raw=r.c,
    ),
    EventKind.SOP_STEP: lambda r: StepPayload(
        r.int_("n"), r.strs("speakers"), r.str_("do"), r.strs("produces"), r.c
    ),
    EventKind.OUTCOME: lambda r: OutcomePayload(
        r.str_("reason"),
        r.str_("sop"),
        r.int_("steps_done"),
        r.int_("steps_total"),
        r.int_("turns"),
        r.c,
    ),
    EventKind.ERROR: lambda r: ErrorPayload(r.str_("error"), r.str_("detail"), r.c),
    EventKind.FALLBACK: lambda r: FallbackPayload(
        r.str_("what"), r.str_("used"), r.str_("reason"), r.c
    ),
    EventKind.WAIT: lambda r: WaitPayload(
        r.strs("waiting_for"),
        r.str_("reason"),
        r.int_("after_step"),
        r.str_("error"),
        r.strs("dropped"),
        r.c,
    ),
    EventKind.FEEDBACK: lambda r: FeedbackPayload(
        r.str_("sop"),
        r.bool_("success"),
        r.num("score"),
        r.int_("corrections"),
        r.str_("at"),
        r.str_("reason"),
        r.strs("people"),
        r.bool_("late"),
        r.c,
    ),
    EventKind.REVISION: lambda r: RevisionPayload(
        r.str_("sop"), r.str_("status"), r.str_("why"), r.c
    ),
    EventKind.EXTRACTION: lambda r: ExtractionPayload(
        r.str_("extracted"), r.str_("status"), r.strs("steps"), r.c
    ),
    EventKind.KNOWLEDGE: lambda r: KnowledgePayload(r.str_("session"), r.c),
    EventKind.SESSION_END: lambda r: SessionEndPayload(
        r.str_("reason"), r.str_("first"), r.str_("last"), r.int_("events"), r.c
    ),
    EventKind.CONSOLIDATION: lambda r: ConsolidationPayload(r.str_("through"), r.c),
    EventKind.REMARK: _remark,
}


def payload_of(event: Event) -> Payload:
    """``event``'s content as the typed payload of its kind (never raises: see the module)."""
    if event.kind == EventKind.MESSAGE:
        return MessagePayload(event.text)
    return _READERS[event.kind](_Read(event.content))


def message_step(event: Event) -> int | None:
    """The SOP step (its number ``n``) a message was said at: its ``meta.step``; None outside
    a step, or in a log that did not record it (lenient, like :func:`payload_of`)."""
    return _Read(event.meta).int_("step")
