"""Every event kind reads as its typed payload; old logs (missing or extra keys) still read."""

from __future__ import annotations

import json
from pathlib import Path

from framework.sessions.entry import entry_meta, first_entry, is_entry, last_entry, scenario_of
from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.payloads import (
    ConsolidationPayload,
    EntryPayload,
    ErrorPayload,
    ExtractionPayload,
    FallbackPayload,
    FeedbackPayload,
    KnowledgePayload,
    MessagePayload,
    OutcomePayload,
    RemarkPayload,
    RevisionPayload,
    SessionEndPayload,
    StepPayload,
    ToolCallPayload,
    ToolResultPayload,
    WaitPayload,
    payload_of,
)

# One event of each kind as the runtime writes it (content keys in the order it writes them).
WRITTEN: dict[EventKind, object] = {
    EventKind.MESSAGE: "hello @pm",
    EventKind.TOOL_CALL: {"name": "write_file", "args": {"path": "a.md"}, "call_id": "c1"},
    EventKind.TOOL_RESULT: {"name": "write_file", "call_id": "c1", "ok": True, "output": "ok"},
    EventKind.PLAN: {"scenario": "tech", "title": "T", "sop": "s@1", "humans": ["ann"]},
    EventKind.SOP_STEP: {"n": 2, "speakers": ["pm"], "do": "outline", "tools": []},
    EventKind.OUTCOME: {"reason": "sop_complete", "sop": "s@1", "steps_done": 3, "turns": 4},
    EventKind.ERROR: {"error": "empty_reply", "detail": "nothing said"},
    EventKind.FALLBACK: {"what": "selector", "used": "round_robin", "reason": "offline"},
    EventKind.WAIT: {"waiting_for": ["ann"], "reason": "waits_for_input", "after_step": 1},
    EventKind.FEEDBACK: {"sop": "s@1", "success": True, "score": 8, "at": "t", "people": ["ann"]},
    EventKind.REVISION: {"sop": "s@2", "status": "draft", "why": "two corrections"},
    EventKind.EXTRACTION: {"extracted": "p@1", "status": "draft", "steps": ["pm: plan"]},
    EventKind.KNOWLEDGE: {"session": "group:a", "journals": {}},
    EventKind.SESSION_END: {"reason": "closed", "first": "e1", "last": "e9", "events": 9},
    EventKind.CONSOLIDATION: {"through": "e5", "messages": 5},
    EventKind.REMARK: {"status": "understood", "by": "ann", "number": 1, "english": True},
}
TYPES = {
    EventKind.MESSAGE: MessagePayload,
    EventKind.TOOL_CALL: ToolCallPayload,
    EventKind.TOOL_RESULT: ToolResultPayload,
    EventKind.PLAN: EntryPayload,
    EventKind.SOP_STEP: StepPayload,
    EventKind.OUTCOME: OutcomePayload,
    EventKind.ERROR: ErrorPayload,
    EventKind.FALLBACK: FallbackPayload,
    EventKind.WAIT: WaitPayload,
    EventKind.FEEDBACK: FeedbackPayload,
    EventKind.REVISION: RevisionPayload,
    EventKind.EXTRACTION: ExtractionPayload,
    EventKind.KNOWLEDGE: KnowledgePayload,
    EventKind.SESSION_END: SessionEndPayload,
    EventKind.CONSOLIDATION: ConsolidationPayload,
    EventKind.REMARK: RemarkPayload,
}


def test_every_kind_has_its_payload_type() -> None:
    assert set(TYPES) == set(EventKind)
    for kind, content in WRITTEN.items():
        assert type(payload_of(make_event("group:a", kind, "system", content))) is TYPES[kind]


def test_fields_read_what_the_runtime_wrote() -> None:
    def read(kind: EventKind) -> object:
        return payload_of(make_event("group:a", kind, "system", WRITTEN[kind]))

    assert read(EventKind.MESSAGE) == MessagePayload("hello @pm")
    call = read(EventKind.TOOL_CALL)
    assert isinstance(call, ToolCallPayload)
    assert (call.name, dict(call.args), call.call_id) == ("write_file", {"path": "a.md"}, "c1")
    step = read(EventKind.SOP_STEP)
    assert isinstance(step, StepPayload)
    assert (step.number, step.speakers, step.do) == (2, ["pm"], "outline")
    fed = read(EventKind.FEEDBACK)
    assert isinstance(fed, FeedbackPayload)
    assert (fed.success, fed.score, fed.people, fed.has_at) == (True, 8, ["ann"], True)
    remark = read(EventKind.REMARK)
    assert isinstance(remark, RemarkPayload)
    assert (remark.status, remark.by, remark.number, remark.english) == (
        "understood",
        "ann",
        1,
        True,
    )


def test_old_logs_with_missing_extra_or_odd_content_read_as_defaults() -> None:
    """Logs of earlier versions lack later keys, hold unknown ones, or (before kinds had
    payloads) a plan event holding feedback: none of it raises, extra keys stay in ``raw``."""
    old_feedback = make_event("group:a", EventKind.FEEDBACK, "system", {"sop": "s@1", "new": 1})
    fed = payload_of(old_feedback)
    assert isinstance(fed, FeedbackPayload)
    assert (fed.at, fed.has_at, fed.people, fed.score) == (None, False, [], None)
    assert fed.raw["new"] == 1
    plan_as_feedback = make_event("group:a", EventKind.PLAN, "system", {"outcome": {"x": 1}})
    assert not is_entry(plan_as_feedback)
    entered = payload_of(plan_as_feedback)
    assert isinstance(entered, EntryPayload) and entered.scenario is None
    for kind in EventKind:  # text where an object is expected, and the other way round
        payload_of(make_event("group:a", kind, "system", "just text"))
        payload_of(make_event("group:a", kind, "system", {"score": "high", "n": "two"}))
    wrong = payload_of(make_event("group:a", EventKind.SOP_STEP, "system", {"n": "two"}))
    assert isinstance(wrong, StepPayload) and wrong.number is None


def test_reading_payloads_leaves_the_log_bytes_unchanged(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "a.jsonl")
    for kind, content in WRITTEN.items():
        log.append(make_event("group:a", kind, "system", content, id=f"id-{kind}"))
    before = log.path.read_bytes()
    events = log.read_all()
    for event in events:
        payload_of(event)
    assert [json.loads(line)["content"] for line in before.splitlines()] == list(WRITTEN.values())
    assert b"".join(e.to_json().encode() + b"\n" for e in events) == before


def test_entry_accessor_finds_the_room_entry_not_other_plan_events() -> None:
    old = make_event("group:a", EventKind.PLAN, "system", {"extracted": "p@1"}, id="old")
    first = make_event("group:a", EventKind.PLAN, "system", {}, id="e1", meta={"entry": True})
    later = make_event(
        "group:a",
        EventKind.PLAN,
        "system",
        {"scenario": "tech"},
        id="e2",
        meta={"entry": True, "epoch": "ab12", "sop": "s@1", "steps": [{"n": 1}]},
    )
    said = make_event("group:a", EventKind.MESSAGE, "ann", "hi", id="m1")
    events: list[Event] = [old, first, said, later, said]
    assert first_entry(events) is first
    assert last_entry(events) is later
    assert first_entry([old, said]) is None
    run = entry_meta(later)
    assert (run.epoch, run.sop, run.steps) == ("ab12", "s@1", [{"n": 1}])
    assert entry_meta(first).steps is None  # entries from before steps were recorded
    assert (scenario_of(later), scenario_of(first), scenario_of(None)) == ("tech", None, None)


def test_the_fields_a_transcript_shows_read_typed_also_from_old_plan_events() -> None:
    """What ``staffroom history`` shows of feedback, revisions, extractions and trials is read
    through the payloads; a ``plan`` event of an old log holding feedback reads as both."""
    feedback = {"sop": "s@1", "success": False, "off_sop_turns": 2, "failures": ["no file"]}
    revision = {"sop": "s@2", "status": "draft", "edits": ["step 2 added"], "notes": ["n"]}
    old = payload_of(
        make_event("group:a", EventKind.PLAN, "system", {"outcome": feedback, "revision": revision})
    )
    assert isinstance(old, EntryPayload) and old.outcome is not None and old.revision is not None
    assert (old.outcome.success, old.outcome.off_sop_turns, old.outcome.failures) == (
        False,
        2,
        ["no file"],
    )
    assert (old.revision.edits, old.revision.notes, old.revision.conflicts) == (
        ["step 2 added"],
        ["n"],
        [],
    )
    conflicts = payload_of(make_event("group:a", EventKind.REVISION, "system", {"conflicts": []}))
    assert isinstance(conflicts, RevisionPayload) and conflicts.edits is None  # no proposal
    notice = {"sop": "s@1", "late": True, "counted": False, "notice": "too late"}
    fed = payload_of(make_event("group:a", EventKind.FEEDBACK, "system", notice))
    assert isinstance(fed, FeedbackPayload)
    assert (fed.counted, fed.notice, fed.success) == (False, "too late", None)
    trials = {"sop_trials": {"s": {"trial": "s@2", "best": "s@1", "share": 0.5}}}
    entry = payload_of(make_event("group:a", EventKind.PLAN, "system", trials))
    assert isinstance(entry, EntryPayload) and entry.trials == [("s@2", "s@1")]
    ran = make_event("group:a", EventKind.PLAN, "system", {}, meta={"entry": True, "sop_trial": 1})
    assert entry_meta(ran).on_trial
