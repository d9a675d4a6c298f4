"""SOP drafts nobody asked for: when an employee reports the task done, or the session ends.

The hooks' bodies; the rules they apply (what a done report is, what work is worth keeping)
are :mod:`framework.sop.auto_extract`. A draft is proposed from the *span*: the events since
the session's start (its last ``session_end``) or its last ``extraction`` event, whether a
person asked for that one or not. So a person's "把这套做法记下来" already handled in the
span leaves nothing to propose for it, and a span is never distilled twice. Nothing is
proposed

* when ``Settings.sop_auto_extract`` or the scenario's ``settings.sop_auto_extract`` is off;
* in a room driven by an SOP: its runs already propose the SOP's next version from their
  outcomes (:func:`~framework.runtime.feedback.close_run`);
* when the span is not worth keeping, or its draft has fewer than ``MIN_STEPS`` steps.

The draft waits for review like any other (never published here), and an ``extraction``
event tells the person what was proposed, why, and how to review it.
"""

from __future__ import annotations

from typing import Any

from framework.runtime.deps import RoomDeps
from framework.runtime.hooks import HookCall
from framework.runtime.sink import EventSink
from framework.sessions.events import Event, EventKind
from framework.sessions.keys import Channel
from framework.sop.auto_extract import MIN_STEPS, Trigger, assess, done_report, reason
from framework.sop.extraction import extract_draft
from framework.sop.model import SopVersion, Status
from framework.sop.store import SopStore

BY = "auto-extraction"
"""The change log's ``by`` of a draft proposed without being asked."""


async def extract_when_done(call: HookCall) -> None:
    """``reply`` hook: an employee reported the task done; propose a draft of the span."""
    reply = call.reply
    if reply is None or not _enabled(call.room):
        return
    said = done_report(reply.text)  # cheap: the log is read only for a report
    if said is not None:
        await propose(
            call.room,
            call.events,
            f"autosop-{call.id}",
            Trigger.TASK_DONE,
            employee=reply.employee,
            said=said,
        )


async def extract_at_session_end(call: HookCall) -> None:
    """``session_end`` hook: the session ended; propose a draft of its unextracted span."""
    if call.session is not None and _enabled(call.room):
        await propose(
            call.room,
            call.events,
            f"autosop-{call.id}",
            Trigger.SESSION_END,
            said=call.session.reason,
        )


def _enabled(deps: RoomDeps) -> bool:
    # A DM's scenario is built with default settings: Settings is its only switch.
    return (
        deps.settings.sop_auto_extract
        and deps.plan.settings.sop_auto_extract
        and deps.plan.sop is None
    )


def _span(deps: RoomDeps) -> list[Event]:
    """The events since the session's start or its last extraction, whichever is newer."""
    marks = (EventKind.SESSION_END, EventKind.EXTRACTION)
    span = deps.log.tail_until(lambda e: e.kind in marks)
    return span[1:] if span and span[0].kind in marks else span


def _target(deps: RoomDeps) -> tuple[str, str]:
    """The SOP id and scope a draft of this session goes to (as a person's request does)."""
    if deps.key.channel == Channel.DM:
        employee = deps.plan.participants[0]
        return f"{employee}-practice", f"employee:{employee}"
    scenario = deps.plan.scenario.id
    return f"{scenario}-practice", f"scenario:{scenario}"


async def propose(
    deps: RoomDeps,
    sink: EventSink,
    done_id: str,
    trigger: Trigger,
    *,
    employee: str = "",
    said: str = "",
) -> SopVersion | None:
    """Store a draft of the span when it is worth keeping, and tell the person (``done_id``
    is the ``extraction`` event's id: deterministic, so a re-run hook proposes nothing twice).

    Returns the draft, or None when nothing was proposed.
    """
    if deps.log.has(done_id):
        return None
    span = _span(deps)
    assessment = assess(span, deps.plan.participants)
    if not assessment.worth_keeping:
        return None
    why = reason(trigger, assessment, employee=employee, said=said)
    sop_id, scope = _target(deps)
    store = deps.sops.store
    session = str(deps.key)
    draft = extract_draft(
        span,
        sop_id=sop_id,
        version=await store.next_version(sop_id),
        scope=scope,
        session=session,
        why=why,
        by=BY,
    )
    if draft is None or len(draft.steps) < MIN_STEPS:
        return None
    stored = await _stored_before(store, draft) or await store.add_version(draft)
    content: dict[str, Any] = {
        "extracted": stored.ref,
        "status": str(stored.status),
        "trigger": str(trigger),
        "why": why,
        "steps": [f"{'/'.join(s.speakers)}: {s.do}" for s in stored.steps],
        "review": f"staffroom sop show {stored.ref}; staffroom sop approve {stored.ref} --by NAME",
    }
    meta = {"sop": stored.ref, "trigger": str(trigger)}
    sink.emit(EventKind.EXTRACTION, "system", content, id=done_id, meta=meta)
    return stored


async def _stored_before(store: SopStore, draft: SopVersion) -> SopVersion | None:
    """The same draft stored by a run that crashed before its event was logged, if any.

    The draft is stored before the event is logged (an event must never name a missing
    draft), so a re-run finds it here instead of adding a copy as the next version: a draft
    of this session by these rules with the same goal and steps (whatever triggered it).
    """
    made = draft.change_log[0]
    for version in await store.versions(draft.sop_id):
        first = version.change_log[0] if version.change_log else None
        if (
            version.status == Status.DRAFT
            and first is not None
            and (first.by, first.source) == (made.by, made.source)
            and (version.goal, version.steps) == (draft.goal, draft.steps)
        ):
            return version
    return None
