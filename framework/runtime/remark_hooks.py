"""Feedback in people's words: wiring of the remark reader into the room (it never waits).

Registered by ``builtins.py``: :func:`read_remark` on every routed message, :func:`open_at_end`
at the end of a run (before the run's outcome is recorded). The rules are in
:mod:`framework.sop.remarks` (what is read and shown), :mod:`framework.sop.remark_words` (the
candidate rule) and :mod:`framework.sop.remark_answers` (how a person confirms later); here
they meet the room:

- only while an SOP run is open or closed within ``sop_feedback_window`` is a remark read,
  and only a candidate costs a model call;
- a message that refers to an understood remark (a reply to it, or naming it: "yes, remark
  2") with a plain yes or no confirms or denies it; a bare "yes" refers to nothing;
- the room's first employee's model reads a candidate
  (:func:`~framework.sop.remark_reading.read_with_model`); an unusable answer is retried once,
  then a ``fallback`` event says why and how to say it in the correction form; the offline
  simulator never pretends to read, and says so once per run;
- what was read is shown back as a ``remark`` event ("remark 1, understood as: …") and the
  run goes on: nothing here makes the room wait.
"""

from __future__ import annotations

from typing import Any

from framework.language import is_english
from framework.models.simulator import SimulatedChatModel
from framework.phrases import Phrase
from framework.runtime.deps import RoomDeps
from framework.runtime.feedback import within_window
from framework.runtime.hooks import HookCall
from framework.runtime.sink import EventSink
from framework.sessions.entry import entry_meta, is_entry
from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import FeedbackPayload, payload_of
from framework.sop.model import Step
from framework.sop.remark_answers import (
    answer_content,
    answer_to,
    at_run_end,
    understood_in,
    unmatched_answer,
)
from framework.sop.remark_reading import read_with_model
from framework.sop.remarks import grammar_hint, is_candidate, read_content, to_corrections

NOT_READ_OFFLINE = Phrase(
    en="the offline simulator does not read free remarks (said once per run); {hint}",
    zh="离线模拟器不读自由表述的反馈（每次运行只提示一次）；{hint}",
)


def open_run(deps: RoomDeps) -> tuple[list[Event], tuple[Step, ...]] | None:
    """The events of the room's SOP run still open (from its entry) and its steps, or None.

    None for a room or DM without an SOP, and once the run closed longer ago than the
    scenario's ``sop_feedback_window``: until then a remark (and its confirmation) still
    counts for the run, as late feedback (:func:`~framework.runtime.feedback.late_feedback`).
    """
    if deps.plan.sop is None:
        return None  # a DM or a room without an SOP: no need to read its log
    events = deps.log.tail_until(is_entry)
    if not events or not is_entry(events[0]):
        return None
    epoch = entry_meta(events[0]).epoch
    closed = next((e for e in events if e.id == f"{epoch}-feedback"), None)
    if closed is not None and not within_window(closed.ts, deps.plan.settings.sop_feedback_window):
        return None  # late remarks count for the run only within the feedback window
    raw = entry_meta(events[0]).steps or []
    steps = tuple(
        Step(speakers=tuple(str(s) for s in step.get("speakers", [])), do=str(step.get("do", "")))
        for step in raw
        if isinstance(step, dict)
    )
    return (events, steps) if steps else None


def _emit(sink: EventSink, content: dict[str, Any], id: str) -> None:
    sink.emit(EventKind.REMARK, "system", content, id=id)


async def read_remark(call: HookCall) -> None:
    """Record a person's yes or no to a remark they refer to, or read a new remark of theirs."""
    message = call.message
    deps = call.room
    if message is None or deps.plan.sop is None or message.get("opening"):
        return  # a room's first message is its input, said before any step ran
    mid, person, text = str(message["id"]), str(message["author"]), str(message["content"])
    run = open_run(deps)
    if run is None:
        _unmatched(call, mid, person, text)  # "yes, remark 1" after the window closed
        return
    events, steps = run
    closed = next((e for e in events if e.kind == EventKind.FEEDBACK), None)
    if closed is not None and isinstance(fed := payload_of(closed), FeedbackPayload):
        people = fed.people or deps.plan.humans
        if person not in people:
            return  # after the close only the run's people may still correct it
    at = next((i for i, e in enumerate(events) if e.id == mid), None)
    if at is not None:
        answer = answer_to(events[: at + 1], events[at])
        if answer is not None:
            if not deps.log.has(f"{mid}-remark-answer"):
                _emit(call.events, answer_content(answer), f"{mid}-remark-answer")
            return
    if _unmatched(call, mid, person, text):
        return
    if not is_candidate(text, steps):
        return
    english = is_english(text)
    done = (f"{mid}-remark", f"{mid}-remark-fallback")
    if any(deps.log.has(d) for d in done):
        return  # read before a crash: never ask the model twice
    first = deps.plan.participants[0]
    model = deps.models.chat[first]
    if isinstance(model, SimulatedChatModel):
        once = f"{entry_meta(events[0]).epoch}-remark-offline"
        if not deps.log.has(once):  # once per run, not after every remark
            language = "en" if english else "zh"
            reason = NOT_READ_OFFLINE(language, hint=grammar_hint(english))
            _fallback(call.events, reason, once)
        return
    await _ask_model(call, events, steps, (mid, person, text), done)


async def _ask_model(
    call: HookCall,
    events: list[Event],
    steps: tuple[Step, ...],
    said: tuple[str, str, str],
    done: tuple[str, str],
) -> None:
    """Ask the room's first employee's model to read the remark; show back what it read."""
    deps = call.room
    mid, person, text = said
    english = is_english(text)
    first = deps.plan.participants[0]
    profile = deps.models.profiles[first]
    answer = await read_with_model(
        deps.models.chat[first],
        profile,
        deps.renderer,
        ref=entry_meta(events[0]).sop or "",  # the version the run entered on
        steps=steps,
        employees=deps.plan.participants,
        person=person,
        text=text,
        retries=deps.settings.model_retries,
        backoff=deps.settings.model_backoff,
    )
    if answer.value is None:
        reason = answer.fallback_reason or "no answer"
        _fallback(call.events, f"{reason}; {grammar_hint(english)}", done[1])
        return
    corrections = to_corrections(answer.value, text, person)
    number = len(understood_in(events)) + 1  # named in its run: "remark 2"
    content = read_content(corrections, steps, english=english, number=number)
    content.update(by=person, remark=mid, read_by=f"model:{profile.label}")
    _emit(call.events, content, done[0])


def _unmatched(call: HookCall, mid: str, person: str, text: str) -> bool:
    """Say so when ``text`` answers a named remark that is not open; True when it did."""
    notice = unmatched_answer(text, person)
    if notice is not None and not call.room.log.has(f"{mid}-remark-answer"):
        _emit(call.events, notice, f"{mid}-remark-answer")
    return notice is not None


def _fallback(sink: EventSink, reason: str, id: str) -> None:
    used = {"what": "remark", "used": "not counted", "reason": reason}
    sink.emit(EventKind.FALLBACK, "system", used, id=id)


async def open_at_end(call: HookCall) -> None:
    """The run ends: its understood remarks not yet confirmed are left out of its outcome,
    visibly; they stay open for a confirmation until the feedback window closes."""
    run = open_run(call.room) if call.run is not None else None
    if run is None:
        return
    window = call.room.plan.settings.sop_feedback_window
    for id, content in at_run_end(run[0], window):
        if not call.room.log.has(id):
            _emit(call.events, content, id)
