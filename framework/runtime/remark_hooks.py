"""Feedback in people's words: a person's free remark in an SOP run, read, shown back, confirmed.

Registered by ``builtins.py``: :func:`read_remark` on every routed message,
:func:`unconfirmed_at_end` at the end of a run (before the run's outcome is recorded). The
rules are in :mod:`framework.sop.remarks`; here they meet the room:

- only while an SOP run is open or closed within ``sop_feedback_window`` and only for candidate
  remarks (:func:`~framework.sop.remarks.is_candidate`) is a model asked;
- the room's first employee's model reads the remark with ``read_remark.j2`` (the run's steps,
  numbered) through :func:`~framework.models.structured.ask_structured`; an unusable answer is
  retried once with the problem shown, then a ``fallback`` event says why and how to say it
  in the correction form; the offline simulator never pretends to read: the same ``fallback``
  says it does not read free remarks;
- what was read is shown back as a ``remark`` event ("理解为：…"); the person's next message
  settles it: confirmation words make it ``confirmed`` (it counts), anything else ``dropped``;
  still unsettled when the run ends, it is ``dropped`` too and never counts.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage

from framework.language import is_english, snippet
from framework.models.simulator import SimulatedChatModel
from framework.models.structured import answer_format, ask_structured
from framework.runtime.deps import RoomDeps
from framework.runtime.feedback import within_window
from framework.runtime.hooks import HookCall
from framework.runtime.sink import EventSink
from framework.sessions.events import Event, EventKind
from framework.sop.edits import render_step
from framework.sop.model import Step
from framework.sop.remarks import (
    CONFIRMED,
    DROPPED,
    EXAMPLE,
    NOT_A_CORRECTION,
    REMARK_CHARS,
    UNDERSTOOD,
    RemarkAnswer,
    answer_problem,
    confirm_ask,
    correction_dict,
    describe,
    grammar_hint,
    is_candidate,
    is_confirmation,
    lenient_answer,
    pending_understanding,
    to_corrections,
    understood_text,
)

NOT_READ_OFFLINE = "the offline simulator does not read free remarks"


def _is_entry(event: Event) -> bool:
    return event.kind == EventKind.PLAN and bool(event.meta.get("entry"))


def open_run(deps: RoomDeps) -> tuple[list[Event], tuple[Step, ...]] | None:
    """The events of the room's SOP run still open (from its entry) and its steps, or None.

    None for a room or DM without an SOP, and once the run closed longer ago than the
    scenario's ``sop_feedback_window``: until then a remark (and its confirmation) still
    counts for the run, as late feedback (:func:`~framework.runtime.feedback.late_feedback`).
    """
    if deps.plan.sop is None:
        return None  # a DM or a room without an SOP: no need to read its log
    events = deps.log.tail_until(_is_entry)
    if not events or not _is_entry(events[0]):
        return None
    epoch = events[0].meta.get("epoch")
    closed = next((e for e in events if e.id == f"{epoch}-feedback"), None)
    if closed is not None and not within_window(closed.ts, deps.plan.settings.sop_feedback_window):
        return None  # late remarks count for the run only within the feedback window
    raw = events[0].meta.get("steps") or []
    steps = tuple(
        Step(speakers=tuple(str(s) for s in step.get("speakers", [])), do=str(step.get("do", "")))
        for step in raw
        if isinstance(step, dict)
    )
    return (events, steps) if steps else None


def _emit(sink: EventSink, content: dict[str, Any], id: str) -> None:
    sink.emit(EventKind.REMARK, "system", content, id=id)


def _settle(sink: EventSink, understood: Event, status: str, why: str, id: str) -> None:
    """Confirm or drop ``understood``, saying so in its person's language."""
    c = understood.content
    english = bool(c.get("english"))
    told = str(c.get("told") or "")
    if status == CONFIRMED:
        text = (
            f"confirmed, counted in this run: {told}"
            if english
            else f"已确认，计入本次运行：{told}"
        )
    else:
        text = f"not counted: {told} ({why})" if english else f"未计入：{told}（{why}）"
    content = {
        "status": status,
        "by": c.get("by"),
        "understood": understood.id,
        "text": text,
        "english": english,
        "corrections": c.get("corrections") if status == CONFIRMED else [],
    }
    _emit(sink, content, id)


async def read_remark(call: HookCall) -> None:
    """Settle the person's pending understood remark, or read a new remark of theirs."""
    message = call.message
    deps = call.room
    run = open_run(deps) if message is not None else None
    if message is None or run is None or message.get("opening"):
        return  # a room's first message is its input, said before any step ran
    events, steps = run
    mid, person, text = str(message["id"]), str(message["author"]), str(message["content"])
    closed = next((e for e in events if e.kind == EventKind.FEEDBACK), None)
    if closed is not None and isinstance(closed.content, dict):
        people = closed.content.get("people") or deps.plan.humans
        if person not in people:
            return  # after the close only the run's people may still correct it
    at = next((i for i, e in enumerate(events) if e.id == mid), len(events))
    pending = pending_understanding(events[:at], person)
    if pending is not None:
        if is_confirmation(text):
            _settle(call.events, pending, CONFIRMED, "", f"{mid}-remark-confirmed")
            return
        english = bool(pending.content.get("english"))
        why = "something else was said before confirming" if english else "没有确认就说了别的"
        _settle(call.events, pending, DROPPED, why, f"{mid}-remark-dropped")
    if not is_candidate(text, steps):
        return
    english = is_english(text)
    done = (f"{mid}-remark", f"{mid}-remark-fallback")
    if any(deps.log.has(d) for d in done):
        return  # read before a crash: never ask the model twice
    first = deps.plan.participants[0]
    model = deps.models.chat[first]
    if isinstance(model, SimulatedChatModel):
        _fallback(call.events, f"{NOT_READ_OFFLINE}; {grammar_hint(english)}", done[1])
        return
    profile = deps.models.profiles[first]
    prompt = deps.renderer.render(
        "read_remark.j2",
        {
            "ref": str(events[0].meta.get("sop") or ""),  # the version the run entered on
            "steps": [render_step(n, s) for n, s in enumerate(steps, start=1)],
            "employees": deps.plan.participants,
            "person": person,
            "remark": snippet(text, REMARK_CHARS),
            "answer_format": answer_format(RemarkAnswer, [EXAMPLE]),
        },
        language="en" if english else "zh",
    )
    answer = await ask_structured(
        model,
        [SystemMessage(content=prompt), HumanMessage(content="Answer the corrections as JSON.")],
        RemarkAnswer,
        profile,
        examples=[EXAMPLE],
        check=lambda a: answer_problem(a, steps, deps.plan.participants),
        lenient=lenient_answer,
        retries=deps.settings.model_retries,
        backoff=deps.settings.model_backoff,
    )
    if answer.value is None:
        reason = answer.fallback_reason or "no answer"
        _fallback(call.events, f"{reason}; {grammar_hint(english)}", done[1])
        return
    corrections = to_corrections(answer.value, text, person)
    content: dict[str, Any] = {
        "status": UNDERSTOOD if corrections else NOT_A_CORRECTION,
        "by": person,
        "remark": mid,
        "read_by": f"model:{profile.label}",
        "english": english,
        "corrections": [correction_dict(c) for c in corrections],
    }
    if corrections:
        told = ("; " if english else "；").join(describe(c, steps, english) for c in corrections)
        content.update(told=told, text=understood_text(corrections, steps, english))
        content["ask"] = confirm_ask(english)
    else:
        content["text"] = (
            "not read as a correction of the SOP's steps"
            if english
            else "没有读出对 SOP 步骤的纠正"
        )
    _emit(call.events, content, done[0])


def _fallback(sink: EventSink, reason: str, id: str) -> None:
    used = {"what": "remark", "used": "not counted", "reason": reason}
    sink.emit(EventKind.FALLBACK, "system", used, id=id)


async def unconfirmed_at_end(call: HookCall) -> None:
    """The run ends: every understood remark still waiting for its person is dropped, visibly."""
    run = open_run(call.room) if call.run is not None else None
    if run is None:
        return
    events, _ = run
    people = {str(e.content.get("by")) for e in events if e.kind == EventKind.REMARK}
    for person in sorted(people):
        pending = pending_understanding(events, person)
        if pending is not None:
            english = bool(pending.content.get("english"))
            why = "not confirmed before the run ended" if english else "运行结束前没有确认"
            _settle(call.events, pending, DROPPED, why, f"{pending.id}-dropped-at-end")
