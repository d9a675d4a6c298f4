"""At the end of an SOP run: store the group's outcome against its version, revise the SOP."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from framework.models.simulator import SimulatedChatModel
from framework.runtime.deps import RoomDeps
from framework.runtime.sink import EventSink
from framework.sessions.events import Event, EventKind
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import Channel
from framework.sop.edits import describe
from framework.sop.extraction import extract_draft
from framework.sop.model_reviser import Proposal, model_reviser, recorded, rule_reviser
from framework.sop.outcomes import run_outcome


def run_events(log: JsonlLog, entry_id: str) -> list[Event]:
    """The events from the room entry ``entry_id`` to now, read from the end of the log."""
    return log.tail_until(lambda e: e.id == entry_id)


async def close_run(deps: RoomDeps, sink: EventSink, state: Mapping[str, Any], reason: str) -> None:
    """Record the run's outcome (once) and, by the scenario's policy, propose the next version."""
    sop_ref = state.get("sop")
    epoch = state["epoch"]
    done_id = f"{epoch}-feedback"
    if not sop_ref or deps.log.has(done_id):
        return
    events = run_events(deps.log, f"{epoch}-entry")
    outcome = run_outcome(
        events, sop_ref=sop_ref, session=str(deps.key), reason=reason, workspace=deps.workspace.root
    )
    settings = deps.plan.settings
    # The room's first employee's model revises; the simulator uses the rules instead.
    first = deps.plan.participants[0]
    model = deps.models.chat[first]
    reviser = (
        rule_reviser
        if isinstance(model, SimulatedChatModel)
        else model_reviser(
            model,
            deps.renderer,
            deps.models.profiles[first],
            retries=deps.settings.model_retries,
            backoff=deps.settings.model_backoff,
        )
    )
    proposals: list[Proposal] = []
    revision = await deps.sops.record_run(
        outcome,
        feedback=settings.sop_feedback,
        auto_publish=settings.sop_auto_publish,
        reviewers=settings.sop_reviewers,
        reviser=recorded(reviser, proposals),
    )
    for proposal in proposals:
        if proposal.fallback is not None:  # the rules stood in for the model: say why
            used = {"what": "sop_revision", "used": "rules", "reason": proposal.fallback}
            sink.emit(EventKind.FALLBACK, "system", used, id=f"{epoch}-fallback-sop")
    if revision is not None:
        proposed = {
            "sop": revision.version.ref,
            "status": str(revision.version.status),
            "why": revision.version.change_log[-1].why,
            "edits": [describe(op) for op in revision.ops],
            "reviewers": list(settings.sop_reviewers),
        }
        meta = {"sop": sop_ref, "run": done_id}
        sink.emit(EventKind.REVISION, "system", proposed, id=f"{epoch}-revision", meta=meta)
    measured = {
        "sop": sop_ref,
        "success": outcome.success,
        "score": outcome.score,
        "corrections": len(outcome.corrections),
        "off_sop_turns": outcome.off_sop_turns,
        "human_interventions": outcome.human_interventions,
        "duration_s": round(outcome.duration_s, 3),
        "failures": list(outcome.failures),  # why the run lacks evidence of work
    }
    # Last: its id marks the run's feedback as recorded.
    sink.emit(EventKind.FEEDBACK, "system", measured, id=done_id, meta={"sop": sop_ref})


async def save_as_sop(deps: RoomDeps, sink: EventSink, message_id: str) -> None:
    """A person asked to keep this way of working: store an SOP draft distilled from the session.

    In a room the draft is the next version of the room's SOP (or a new ``<scenario>-practice``
    SOP); in a DM a ``<employee>-practice`` SOP scoped to that employee, which is recommended
    to the employee's other users once published.
    """
    done_id = f"extract-{message_id}"
    if deps.log.has(done_id):
        return
    scenario = deps.plan.scenario
    if deps.key.channel == Channel.DM:
        employee = deps.plan.participants[0]
        sop_id, scope = f"{employee}-practice", f"employee:{employee}"
    elif deps.plan.sop is not None:
        sop_id, scope = deps.plan.sop.sop_id, deps.plan.sop.scope
    else:
        sop_id, scope = f"{scenario.id}-practice", f"scenario:{scenario.id}"
    store = deps.sops.store
    version = await store.next_version(sop_id)
    # Extraction is rare and explicit: reading the whole session is the point.
    draft = extract_draft(
        deps.log.read_all(), sop_id=sop_id, version=version, scope=scope, session=str(deps.key)
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
    sink.emit(EventKind.EXTRACTION, "system", content, id=done_id, meta=meta)
