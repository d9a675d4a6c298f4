"""Typed payloads: one frozen dataclass per :class:`EventKind`, read by :func:`payload_of`.

An event's ``content`` stays what the log holds (text, or a JSON object), so the JSONL bytes
and the event ids never change; readers go through :func:`payload_of` instead of
``content.get(...)``. Reading is lenient, as the log readers always were: logs from earlier
versions lack keys written later and hold keys no payload names, so a missing key (or a
value of the wrong JSON type) reads as the field's default and the whole object stays in
``raw``. The reader never raises on an event's content.

Old logs also hold feedback and extractions as ``plan`` events (content keys ``outcome`` /
``extracted``); :func:`payload_of` reads those as the ``plan`` payload (holding them typed in its
``outcome``, ``revision`` and ``extraction``), and :func:`framework.sessions.entry.is_entry`
tells the room's entry (``meta.entry``) from them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from framework.sessions.events import Event, EventKind
from framework.sessions.lenient import Lenient


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
    trials: list[tuple[str | None, str | None]]
    """``(trial, best)`` of each running SOP trial of the room's SOPs (``sop_trials``)."""
    outcome: FeedbackPayload | None
    """Old logs: a run's feedback written as a ``plan`` event, with its ``revision``."""
    revision: RevisionPayload | None
    extraction: ExtractionPayload | None
    """Old logs: an extraction written as a ``plan`` event."""
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
    counted: bool
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


def _tool_result(r: Lenient) -> Payload:
    output = r.c.get("output")
    text = output if isinstance(output, str) else "" if output is None else str(output)
    return ToolResultPayload(
        r.str_("name"), r.str_("call_id"), r.bool_("ok"), text, "budget" in r.c, r.c
    )


def _remark(r: Lenient) -> Payload:
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


def _entry(r: Lenient) -> Payload:
    trials = [Lenient(t) for t in r.dict_("sop_trials").values()]
    outcome, revision = r.c.get("outcome"), r.c.get("revision")
    return EntryPayload(
        scenario=r.str_("scenario"),
        scenario_source=r.str_("scenario_source"),
        title=r.str_("title"),
        announcement=r.str_("announcement"),
        sop=r.str_("sop"),
        participants=r.strs("participants"),
        humans=r.strs("humans"),
        trials=[(t.str_("trial"), t.str_("best")) for t in trials],
        outcome=_feedback(Lenient(outcome)) if isinstance(outcome, dict) else None,
        revision=_revision(Lenient(revision)) if isinstance(revision, dict) else None,
        extraction=_extraction(r) if "extracted" in r.c else None,
        raw=r.c,
    )


def _feedback(r: Lenient) -> FeedbackPayload:
    return FeedbackPayload(
        sop=r.str_("sop"),
        success=r.flag("success"),
        score=r.num("score"),
        corrections=r.int_("corrections"),
        off_sop_turns=r.int_("off_sop_turns"),
        human_interventions=r.int_("human_interventions"),
        failures=r.strs("failures"),
        at=r.str_("at"),
        reason=r.str_("reason"),
        people=r.strs("people"),
        late=r.bool_("late"),
        counted=r.c.get("counted") is not False,
        notice=r.str_("notice"),
        raw=r.c,
    )


def _revision(r: Lenient) -> RevisionPayload:
    edits = r.strs("edits") if "edits" in r.c else None
    reselected, conflicts, notes = r.bool_("reselected"), r.strs("conflicts"), r.strs("notes")
    return RevisionPayload(
        r.str_("sop"), r.str_("status"), r.str_("why"), reselected, edits, conflicts, notes, r.c
    )


def _extraction(r: Lenient) -> ExtractionPayload:
    return ExtractionPayload(
        r.str_("extracted"), r.str_("status"), r.strs("steps"), r.str_("why"), r.str_("review"), r.c
    )


_READERS: dict[EventKind, Callable[[Lenient], Payload]] = {
    EventKind.TOOL_CALL: lambda r: ToolCallPayload(
        r.str_("name"), r.dict_("args"), r.str_("call_id"), r.str_("protocol"), r.c
    ),
    EventKind.TOOL_RESULT: _tool_result,
    EventKind.PLAN: _entry,
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
    EventKind.FEEDBACK: _feedback,
    EventKind.REVISION: _revision,
    EventKind.EXTRACTION: _extraction,
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
    return _READERS[event.kind](Lenient(event.content))
