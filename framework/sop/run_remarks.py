"""Feedback in people's words: wiring of the remark reader into the room (it never waits).

Registered by ``sop/extension.py``: :func:`read_remark` on every routed message, :func:`open_at_end`
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

from framework.extensions.context import HookContext
from framework.extensions.hooks import MessageRouted, RunEnded
from framework.extensions.sink import EventSink
from framework.language import is_english
from framework.models.simulator import SimulatedChatModel
from framework.phrases import Phrase
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
from framework.sop.run_feedback import within_window

NOT_READ_OFFLINE = Phrase(
    en="the offline simulator does not read free remarks (said once per run); {hint}",
    zh="离线模拟器不读自由表述的反馈（每次运行只提示一次）；{hint}",
)


def open_run(ctx: HookContext) -> tuple[list[Event], tuple[Step, ...]] | None:
    """The events of the room's SOP run still open (from its entry) and its steps, or None.

    None for a room or DM without an SOP, and once the run closed longer ago than the
    scenario's ``sop_feedback_window``: until then a remark (and its confirmation) still
    counts for the run, as late feedback (:func:`~framework.sop.run_feedback.late_feedback`).
    """
    if ctx.sop_ref is None:
        return None  # a DM or a room without an SOP: no need to read its log
    events = ctx.log.tail_until(is_entry)
    if not events or not is_entry(events[0]):
        return None
    entered = entry_meta(events[0])
    epoch = entered.epoch
    closed = next((e for e in events if e.id == f"{epoch}-feedback"), None)
    if closed is not None and not within_window(
        closed.ts, ctx.scenario_settings.sop_feedback_window
    ):
        return None  # late remarks count for the run only within the feedback window
    raw = entered.steps or []
    steps = tuple(
        Step(speakers=tuple(str(s) for s in step.get("speakers", [])), do=str(step.get("do", "")))
        for step in raw
        if isinstance(step, dict)
    )
    return (events, steps) if steps else None


def _emit(sink: EventSink, content: dict[str, Any], id: str) -> None:
    sink.emit(EventKind.REMARK, "system", content, id=id)


async def read_remark(routed: MessageRouted, ctx: HookContext) -> None:
    """Record a person's yes or no to a remark they refer to, or read a new remark of theirs."""
    if ctx.sop_ref is None or routed.message.get("opening"):
        return  # a room's first message is its input, said before any step ran
    mid, person, text = routed.id, routed.author, routed.content
    run = open_run(ctx)
    if run is None:
        _unmatched(ctx, mid, person, text)  # "yes, remark 1" after the window closed
        return
    events, steps = run
    closed = next((payload_of(e) for e in events if e.kind == EventKind.FEEDBACK), None)
    if isinstance(closed, FeedbackPayload) and person not in (closed.people or ctx.humans):
        return  # after the close only the run's people may still correct it
    at = next((i for i, e in enumerate(events) if e.id == mid), None)
    if at is not None:
        answer = answer_to(events[: at + 1], events[at])
        if answer is not None:
            if not ctx.log.has(f"{mid}-remark-answer"):
                _emit(ctx.events, answer_content(answer), f"{mid}-remark-answer")
            return
    if _unmatched(ctx, mid, person, text):
        return
    if not is_candidate(text, steps):
        return
    english = is_english(text)
    done = (f"{mid}-remark", f"{mid}-remark-fallback")
    if any(ctx.log.has(d) for d in done):
        return  # read before a crash: never ask the model twice
    if isinstance(ctx.model(ctx.participants[0]).chat, SimulatedChatModel):
        once = f"{entry_meta(events[0]).epoch}-remark-offline"
        if not ctx.log.has(once):  # once per run, not after every remark
            language = "en" if english else "zh"
            reason = NOT_READ_OFFLINE(language, hint=grammar_hint(english))
            _fallback(ctx.events, reason, once)
        return
    await _ask_model(ctx, events, steps, (mid, person, text), done)


async def _ask_model(
    ctx: HookContext,
    events: list[Event],
    steps: tuple[Step, ...],
    said: tuple[str, str, str],
    done: tuple[str, str],
) -> None:
    """Ask the room's first employee's model to read the remark; show back what it read."""
    mid, person, text = said
    english = is_english(text)
    model = ctx.model(ctx.participants[0])
    profile = model.profile
    answer = await read_with_model(
        model.chat,
        profile,
        ctx.renderer,
        ref=entry_meta(events[0]).sop or "",  # the version the run entered on
        steps=steps,
        employees=ctx.participants,
        person=person,
        text=text,
        retries=model.retries,
        backoff=model.backoff,
    )
    if answer.value is None:
        reason = answer.fallback_reason or "no answer"
        _fallback(ctx.events, f"{reason}; {grammar_hint(english)}", done[1])
        return
    corrections = to_corrections(answer.value, text, person)
    number = len(understood_in(events)) + 1  # named in its run: "remark 2"
    content = read_content(corrections, steps, english=english, number=number)
    content.update(by=person, remark=mid, read_by=f"model:{profile.label}")
    _emit(ctx.events, content, done[0])


def _unmatched(ctx: HookContext, mid: str, person: str, text: str) -> bool:
    """Say so when ``text`` answers a named remark that is not open; True when it did."""
    notice = unmatched_answer(text, person)
    if notice is not None and not ctx.log.has(f"{mid}-remark-answer"):
        _emit(ctx.events, notice, f"{mid}-remark-answer")
    return notice is not None


def _fallback(sink: EventSink, reason: str, id: str) -> None:
    used = {"what": "remark", "used": "not counted", "reason": reason}
    sink.emit(EventKind.FALLBACK, "system", used, id=id)


async def open_at_end(_ended: RunEnded, ctx: HookContext) -> None:
    """The run ends: its understood remarks not yet confirmed are left out of its outcome,
    visibly; they stay open for a confirmation until the feedback window closes."""
    run = open_run(ctx)
    if run is None:
        return
    window = ctx.scenario_settings.sop_feedback_window
    for id, content in at_run_end(run[0], window):
        if not ctx.log.has(id):
            _emit(ctx.events, content, id)
