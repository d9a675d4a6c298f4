"""Typed payloads: one frozen dataclass per :class:`EventKind`, read by :func:`payload_of`.

An event's ``content`` stays what the log holds (text, or a JSON object), so the JSONL bytes
and the event ids never change; readers go through :func:`payload_of` instead of
``content.get(...)``. Reading is lenient, as the log readers always were: logs from earlier
versions lack keys written later and hold keys no payload names, so a missing key (or a
value of the wrong JSON type) reads as the field's default and the whole object stays in
``raw``. The reader never raises on an event's content.

Old logs also hold feedback and extractions as ``plan`` events (content keys ``outcome`` /
``extracted``); :func:`payload_of` reads those as the ``plan`` payload (holding them typed in its
``outcome``, ``revision`` and ``extraction``), and
:func:`framework.sessions.entry.is_entry` tells the room's entry (``meta.entry``) from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from framework.sessions.events import Event, EventKind

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_P = TypeVar("_P", bound="DataclassInstance")

_EMPTY: Mapping[str, Any] = {}

_LOGGED_AS = "logged_as"
"""Field metadata: the log's key for a field named otherwise."""
_PRESENCE = "presence"
"""Field metadata: a ``bool`` field that tells whether this key is in the log at all."""
_READ = "read"
"""Field metadata: the field's own reader ``(content, key) -> value``, for a field no
declared type reads (nested payloads of old logs, a flag that defaults to true)."""


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
    has_budget: bool = field(metadata={_PRESENCE: "budget"})
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
    trials: list[tuple[str | None, str | None]] = field(
        metadata={_LOGGED_AS: "sop_trials", _READ: lambda c, key: _trials(c.get(key))}
    )
    """``(trial, best)`` of each running SOP trial of the room's SOPs (``sop_trials``)."""
    outcome: FeedbackPayload | None = field(
        metadata={_READ: lambda c, key: _nested(EventKind.FEEDBACK, c.get(key))}
    )
    """Old logs: a run's feedback written as a ``plan`` event, with its ``revision``."""
    revision: RevisionPayload | None = field(
        metadata={_READ: lambda c, key: _nested(EventKind.REVISION, c.get(key))}
    )
    extraction: ExtractionPayload | None = field(
        metadata={_READ: lambda c, _key: _nested(EventKind.EXTRACTION, c, when="extracted")}
    )
    """Old logs: an extraction written as a ``plan`` event."""
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class StepPayload:
    """``sop_step``: an SOP step started (the step as the checkpoint keeps it)."""

    number: int | None = field(metadata={_LOGGED_AS: "n"})
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
    success: bool | None
    """None when the event holds no verdict (a notice, a hand-edited log)."""
    score: float | None
    corrections: int | None
    """How many corrections the run (or its late amendment) counted."""
    off_sop_turns: int | None
    human_interventions: int | None
    failures: list[str]
    """Why the run lacks evidence of work (absent in logs from before failures)."""
    at: str | None
    """When the run's outcome was stored (absent in logs from before late feedback)."""
    reason: str | None
    people: list[str]
    late: bool
    counted: bool = field(metadata={_READ: lambda c, key: c.get(key) is not False})
    """False for a notice that a late message did not count (its words in ``notice``)."""
    notice: str | None
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
    reselected: bool
    """The runs asked again for a version that exists (no new one was made)."""
    edits: list[str] | None
    """The edits it made, described; None when the event holds none (only conflicts)."""
    conflicts: list[str]
    notes: list[str]
    """What became of the open draft it replaced."""
    raw: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True, slots=True)
class ExtractionPayload:
    """``extraction``: the SOP draft distilled from a session (``extracted`` None if none)."""

    extracted: str | None
    status: str | None
    steps: list[str]
    why: str | None
    """Why none was extracted, or what triggered an unasked one."""
    review: str | None
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


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _strs(value: object) -> list[str]:
    return [str(v) for v in _list(value)]


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else _EMPTY


def _flag(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _trials(value: object) -> list[tuple[str | None, str | None]]:
    trials = [_dict(t) for t in _dict(value).values()]
    return [(_str(t.get("trial")), _str(t.get("best"))) for t in trials]


def _nested(kind: EventKind, value: object, *, when: str | None = None) -> Any:
    """An old log's payload of ``kind`` held inside a ``plan`` event (None when absent, or,
    with ``when``, when ``value`` lacks that key)."""
    if not isinstance(value, dict) or (when is not None and when not in value):
        return None
    return _READERS[kind](value)


# How a field of each declared type reads its key's value: a value of the wrong JSON type
# reads as missing. ``list[Any] | None`` tells "no such key" (None) from an empty list.
_BY_TYPE: dict[object, Callable[[Mapping[str, Any], str], object]] = {
    str: lambda c, key: _text(c.get(key)),
    str | None: lambda c, key: _str(c.get(key)),
    int | None: lambda c, key: _int(c.get(key)),
    float | None: lambda c, key: _num(c.get(key)),
    bool: lambda c, key: bool(c.get(key)),
    bool | None: lambda c, key: _flag(c.get(key)),
    list[str]: lambda c, key: _strs(c.get(key)),
    list[Any] | None: lambda c, key: _list(c.get(key)) if key in c else None,
    list[str] | None: lambda c, key: _strs(c.get(key)) if key in c else None,
    Mapping[str, Any]: lambda c, key: _dict(c.get(key)),
}


def _lenient(cls: type[_P]) -> Callable[[Mapping[str, Any]], _P]:
    """The reader of ``cls`` from a JSON object: each field by its declared type, ``raw``
    the whole object. Built at import, so a field of a type no reader knows fails there."""
    hints = get_type_hints(cls)
    plan: list[tuple[str, str, Callable[[Mapping[str, Any], str], object]]] = []
    for f in fields(cls):
        if f.name == "raw":
            plan.append((f.name, "", lambda c, _key: c))
        elif _READ in f.metadata:
            plan.append((f.name, f.metadata.get(_LOGGED_AS, f.name), f.metadata[_READ]))
        elif _PRESENCE in f.metadata:
            plan.append((f.name, f.metadata[_PRESENCE], lambda c, key: key in c))
        else:
            plan.append((f.name, f.metadata.get(_LOGGED_AS, f.name), _BY_TYPE[hints[f.name]]))

    def read(content: Mapping[str, Any]) -> _P:
        return cls(**{name: reader(content, key) for name, key, reader in plan})

    return read


_READERS: dict[EventKind, Callable[[Mapping[str, Any]], Payload]] = {
    EventKind.TOOL_CALL: _lenient(ToolCallPayload),
    EventKind.TOOL_RESULT: _lenient(ToolResultPayload),
    EventKind.PLAN: _lenient(EntryPayload),
    EventKind.SOP_STEP: _lenient(StepPayload),
    EventKind.OUTCOME: _lenient(OutcomePayload),
    EventKind.ERROR: _lenient(ErrorPayload),
    EventKind.FALLBACK: _lenient(FallbackPayload),
    EventKind.WAIT: _lenient(WaitPayload),
    EventKind.FEEDBACK: _lenient(FeedbackPayload),
    EventKind.REVISION: _lenient(RevisionPayload),
    EventKind.EXTRACTION: _lenient(ExtractionPayload),
    EventKind.KNOWLEDGE: _lenient(KnowledgePayload),
    EventKind.SESSION_END: _lenient(SessionEndPayload),
    EventKind.CONSOLIDATION: _lenient(ConsolidationPayload),
    EventKind.REMARK: _lenient(RemarkPayload),
}


def payload_of(event: Event) -> Payload:
    """``event``'s content as the typed payload of its kind (never raises: see the module)."""
    if event.kind == EventKind.MESSAGE:
        return MessagePayload(event.text)
    content = event.content
    return _READERS[event.kind](content if isinstance(content, dict) else _EMPTY)


def message_step(event: Event) -> int | None:
    """The SOP step (its number ``n``) a message was said at: its ``meta.step``; None outside
    a step, or in a log that did not record it (lenient, like :func:`payload_of`)."""
    return _int(event.meta.get("step"))
