"""At the end of an SOP run: store the group's outcome against its version, revise the SOP.

Feedback that comes after the run closed (within the scenario's window, from its people)
amends that run's outcome and revises again (:func:`late_feedback`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace as dc_replace
from datetime import UTC, datetime
from typing import Any

from framework.extensions.context import HookContext
from framework.extensions.hooks import MessageRouted
from framework.language import language_of
from framework.models.simulator import SimulatedChatModel
from framework.sessions.entry import entry_meta, is_entry
from framework.sessions.events import Event, EventKind
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import Channel
from framework.sessions.payloads import FeedbackPayload, RemarkPayload, payload_of
from framework.sop.auto_extract import practice_target
from framework.sop.edits import describe
from framework.sop.extraction import extract_draft
from framework.sop.late import refusal
from framework.sop.model import Outcome
from framework.sop.outcomes import (
    SUCCESS_AT,
    correction_key,
    run_corrections,
    run_outcome,
    stated_score,
)
from framework.sop.proposals import Revision
from framework.sop.ref import SopRef
from framework.sop.revisers import Proposal, Reviser, model_reviser, recorded, rule_reviser
from framework.sop.service import SopService
from framework.sop.trials import TrialPolicy


def run_events(log: JsonlLog, entry_id: str) -> list[Event]:
    """The events from the room entry ``entry_id`` to now, read from the end of the log."""
    return log.tail_until(lambda e: e.id == entry_id)


def _reviser(ctx: HookContext, proposals: list[Proposal]) -> Reviser:
    # The room's first employee's model revises; the simulator uses the rules instead.
    model = ctx.model(ctx.participants[0])
    reviser = (
        rule_reviser
        if isinstance(model.chat, SimulatedChatModel)
        else model_reviser(model, ctx.renderer)
    )
    return recorded(reviser, proposals)


def _report(
    ctx: HookContext,
    proposals: list[Proposal],
    revision: Revision | None,
    *,
    prefix: str,
    sop_ref: str,
    run: str,
) -> None:
    """The fallback (if the rules stood in) and the revision (or the conflicts) as events."""
    for proposal in proposals:
        if proposal.fallback is not None:  # the rules stood in for the model: say why
            used = {"what": "sop_revision", "used": "rules", "reason": proposal.fallback}
            ctx.events.emit(EventKind.FALLBACK, "system", used, id=f"{prefix}-fallback-sop")
    if revision is None:
        return
    meta = {"sop": sop_ref, "run": run}
    if not revision.ops:  # nothing to change, but requests the rules left for reviewers
        if not revision.conflicts:
            return
        content = {"sop": sop_ref, "conflicts": revision.conflicts, "notes": revision.notes}
        ctx.events.emit(EventKind.REVISION, "system", content, id=f"{prefix}-conflicts", meta=meta)
        return
    proposed = {
        "sop": revision.version.ref,
        "status": str(revision.version.status),
        "why": revision.version.change_log[-1].why if revision.version.change_log else "",
        "edits": [describe(op, room_language(ctx)) for op in revision.ops],
        "reviewers": list(ctx.scenario_settings.sop_reviewers),
        "conflicts": revision.conflicts,
        "reselected": revision.reselected,
        "supersedes": revision.supersedes,  # the open draft it retired, if any
        "notes": revision.notes,  # what became of that draft and its approvals
    }
    ctx.events.emit(EventKind.REVISION, "system", proposed, id=f"{prefix}-revision", meta=meta)


async def _record(
    ctx: HookContext, sops: SopService, outcome: Outcome, *, prefix: str, run: str, amend: bool
) -> None:
    """Store (or amend) a run's outcome, revise by the scenario's policy, report both."""
    settings = ctx.scenario_settings
    proposals: list[Proposal] = []
    revision = await sops.record_run(
        outcome,
        feedback=settings.sop_feedback,
        auto_publish=settings.sop_auto_publish,
        reviewers=settings.sop_reviewers,
        reviser=_reviser(ctx, proposals),
        threshold=settings.sop_revision_threshold,
        amend=amend,
        language=room_language(ctx),
    )
    _report(ctx, proposals, revision, prefix=prefix, sop_ref=outcome.sop_ref, run=run)


def room_language(ctx: HookContext) -> str:
    """The language the room's SOP texts (reasons, conflicts, notices) are written in."""
    return language_of(ctx.scenario.announcement.text)


async def close_run(
    ctx: HookContext, sops: SopService, state: Mapping[str, Any], reason: str
) -> None:
    """Record the run's outcome (once) and, by the scenario's policy, propose the next version."""
    sop_ref = state.get("sop")
    epoch = state["epoch"]
    done_id = f"{epoch}-feedback"
    if not sop_ref or ctx.log.has(done_id):
        return
    # Without what an earlier, crashed close wrote: the outcome (and its ``at``) must be the
    # same on a retry, or the store keeps the run twice.
    ours = {f"{epoch}-revision", f"{epoch}-conflicts", f"{epoch}-fallback-sop"}
    events = [e for e in run_events(ctx.log, f"{epoch}-entry") if e.id not in ours]
    outcome = run_outcome(
        events,
        sop_ref=sop_ref,
        session=str(ctx.key),
        reason=reason,
        workspace=ctx.workspace,
        language=ctx.language,  # failures are read by the room's people
    )
    settings = ctx.scenario_settings
    await _record(ctx, sops, outcome, prefix=epoch, run=done_id, amend=False)
    # A trial with enough runs on both sides is judged now, not at the next room's entry.
    policy = TrialPolicy(settings.sop_trial_share, settings.sop_trial_runs)
    if policy.share > 0:
        await sops.judge_trials(SopRef.parse(sop_ref, field="sop").sop_id, policy)
    people = sorted({e.author for e in events if e.kind == EventKind.MESSAGE and e.from_person})
    measured = {
        "sop": sop_ref,
        "success": outcome.success,
        "score": outcome.score,
        "corrections": len(outcome.corrections),
        "off_sop_turns": outcome.off_sop_turns,
        "human_interventions": outcome.human_interventions,
        "duration_s": round(outcome.duration_s, 3),
        "failures": list(outcome.failures),  # why the run lacks evidence of work
        # What late feedback needs to find this run's stored outcome and who may amend it.
        "at": outcome.at,
        "reason": reason,
        "people": people,
    }
    # Last: its id marks the run's feedback as recorded.
    ctx.events.emit(EventKind.FEEDBACK, "system", measured, id=done_id, meta={"sop": sop_ref})


async def late_feedback(ctx: HookContext, sops: SopService, message: MessageRouted) -> None:
    """A person's corrections or score after the run closed count for that run.

    Only within ``sop_feedback_window`` seconds of the close, only from the people who took
    part in the run (the scenario's humans when nobody spoke in it), and only until the next
    run starts. The run's stored outcome is amended (corrections deduplicated, success
    recomputed with the new score) and the SOP revised again, as at the close.
    """
    if ctx.sop_ref is None:
        return  # a DM or a room without an SOP: no run to amend, and no log to read back
    events = ctx.log.tail_until(is_entry)
    if not events or not is_entry(events[0]):
        return
    epoch = entry_meta(events[0]).epoch
    closed = next((i for i, e in enumerate(events) if e.id == f"{epoch}-feedback"), None)
    if closed is None:
        return  # the run is still open: its corrections are read when it closes
    done = events[closed]
    feedback = payload_of(done)
    if not isinstance(feedback, FeedbackPayload) or not feedback.has_at or not feedback.sop:
        return  # closed before late feedback existed: its outcome cannot be found
    sop_ref = feedback.sop
    settings = ctx.scenario_settings
    people = set(feedback.people or ctx.humans)
    author = message.author
    in_window = within_window(done.ts, settings.sop_feedback_window)
    if author not in people or not in_window:
        # Not counted: say so to a person whose message was feedback (sop/late.py).
        notice = refusal(
            person=author,
            text=message.content,
            later=events[closed + 1 :],
            people=sorted(people),
            in_window=in_window,
            window=settings.sop_feedback_window,
            sop_ref=sop_ref,
            default_language=room_language(ctx),
        )
        notice_id = f"{epoch}-late-{message.id}-notice"
        if notice is not None and not ctx.log.has(notice_id):
            counted = {"sop": sop_ref, "late": True, "counted": False}
            body = {**counted, "by": author, "notice": notice, "run": done.id}
            ctx.events.emit(
                EventKind.FEEDBACK, "system", body, id=notice_id, meta={"sop": body["sop"]}
            )
        return
    late = [e for e in events[closed + 1 :] if _from(e, people)]
    said = run_corrections(late)
    scores = [stated_score(e.text) for e in late if e.kind == EventKind.MESSAGE]
    score = next((s for s in reversed(scores) if s is not None), None)
    if not said and score is None:
        return
    stored = [o for o in await sops.store.outcomes(sop_ref) if o.session == str(ctx.key)]
    original = next((o for o in stored if o.at == feedback.at), None)
    if original is None:
        return
    merged = {correction_key(c): c for c in (*original.corrections, *said)}
    corrections = tuple(merged.values())
    score = score if score is not None else original.score
    success = not original.failures and (
        score >= SUCCESS_AT
        if score is not None
        else feedback.reason == "sop_complete" and not corrections
    )
    # A run nobody spoke in has no user yet: the person judging it afterwards is its user.
    user = original.user or message.author
    amended = dc_replace(original, corrections=corrections, score=score, success=success, user=user)
    prefix = f"{epoch}-late-{message.id}"
    if ctx.log.has(f"{prefix}-feedback"):
        return  # this message was counted already (a redelivery)
    if amended == original and _reported(events[closed + 1 :], amended):
        return  # nothing new since the last late feedback was reported
    await _record(ctx, sops, amended, prefix=prefix, run=done.id, amend=True)
    measured = {
        "sop": sop_ref,
        "success": amended.success,
        "score": amended.score,
        "corrections": len(amended.corrections),
        "late": True,
        "run": done.id,
    }
    ctx.events.emit(
        EventKind.FEEDBACK, "system", measured, id=f"{prefix}-feedback", meta={"sop": sop_ref}
    )


def _from(event: Event, people: set[str]) -> bool:
    """A person's message, or a remark event, of one of the run's ``people``."""
    if event.kind == EventKind.MESSAGE:
        return event.from_person and event.author in people
    remark = payload_of(event)
    return isinstance(remark, RemarkPayload) and str(remark.by) in people


def _reported(events: list[Event], outcome: Outcome) -> bool:
    """Whether a late ``feedback`` event already reported ``outcome`` (a crash after the store
    was amended but before the revision leaves none, and the revision is then made again)."""
    return any(
        isinstance(said := payload_of(e), FeedbackPayload)
        and said.late
        and said.corrections == len(outcome.corrections)
        and said.score == outcome.score
        for e in events
    )


def within_window(closed_ts: str, window: int) -> bool:
    """Whether less than ``window`` seconds passed since ``closed_ts`` (an event's time)."""
    closed = datetime.fromisoformat(closed_ts.replace("Z", "+00:00"))
    return (datetime.now(UTC) - closed).total_seconds() <= window


async def save_as_sop(ctx: HookContext, sops: SopService, message_id: str) -> None:
    """A person asked to keep this way of working: store an SOP draft distilled from the session.

    In a room the draft is the next version of the room's SOP (or a new ``<scenario>-practice``
    SOP); in a DM a ``<employee>-practice`` SOP scoped to that employee, which is recommended
    to the employee's other users once published.
    """
    done_id = f"extract-{message_id}"
    if ctx.log.has(done_id):
        return
    if ctx.key.channel != Channel.DM and ctx.sop_ref is not None:
        # The next version of the room's SOP.
        ref = SopRef.parse(ctx.sop_ref, field="sop")
        room_sop = await sops.store.get(ref.sop_id, ref.version)
        sop_id, scope = room_sop.sop_id, room_sop.scope
    else:
        sop_id, scope = practice_target(ctx)
    store = sops.store
    version = await store.next_version(sop_id)
    # Extraction is rare and explicit: reading the whole session is the point.
    draft = extract_draft(
        ctx.log.read_all(), sop_id=sop_id, version=version, scope=scope, session=str(ctx.key)
    )
    if draft is None:
        content: dict[str, Any] = {"extracted": None, "why": "no employee turn to learn from yet"}
    else:
        stored = await store.add_version(draft)
        content = {
            "extracted": stored.ref,
            "status": str(stored.status),
            "steps": [f"{'/'.join(s.speakers)}: {s.do}" for s in stored.steps],
            "review": f"staffroom sop show {stored.ref}; "
            f"staffroom sop approve {stored.ref} --by NAME",
        }
    meta = {"sop": content["extracted"]}
    ctx.events.emit(EventKind.EXTRACTION, "system", content, id=done_id, meta=meta)
