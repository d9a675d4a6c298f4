"""A room's checkpoint checked against its log, and rebuilt from the log when it is lost.

The checkpoint holds the control state (which step, whose turn); the JSONL log holds what
happened. Either can be lost on its own: a deleted ``checkpoints.sqlite`` would make a room
start over (its SOP run twice), an emptied log would let a room go on with no history. Both
are detected before a room runs (:func:`integrity_problem`) and refused with the command that
repairs them, never papered over.

Rebuilding needs no model: every ``wait`` event carries the control state the room had when
it paused (``meta.state``) and the entry event carries the SOP steps it took, so a room is
rebuilt at its last pause (or its entry, or its outcome). Events after that pause are kept:
when the run is driven again its nodes re-append the same deterministic ids, which the log
skips, so nothing is stored or shown twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from framework.errors import StorageError
from framework.runtime.state import at_index, entry_state
from framework.sessions.entry import entry_meta, is_entry, scenario_of
from framework.sessions.events import Event, EventKind
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.payloads import OutcomePayload, payload_of

SNAPSHOT_KEYS = (
    "step",
    "phase",
    "turns",
    "run_turns",
    "queue",
    "deferred",
    "consumed",
    "last_speaker",
    "last_error",
)
"""The control state a ``wait`` event records, enough to put the room back at that pause."""

REPAIR = "staffroom doctor --repair"


def snapshot(state: Any) -> dict[str, Any]:
    """The part of a room's state a ``wait`` event records (JSON-ready)."""
    return {key: state.get(key) for key in SNAPSHOT_KEYS}


def integrity_problem(values: dict[str, Any], log: JsonlLog) -> str | None:
    """Why this checkpoint and this log disagree, or None when they fit together.

    Cheap enough for every run: it looks up ids in the log's index, it does not read the log.
    """
    if not values:
        return _lost_checkpoint(log)
    epoch = values.get("epoch")
    if not epoch:
        return None
    if not log.has(f"{epoch}-entry"):
        return (
            f"the log {log.path} has lost events its checkpoint knows (the room's entry "
            f"event {epoch}-entry is not in it; it was emptied, replaced or deleted)"
        )
    missing = [mid for mid in values.get("consumed") or [] if not log.has(mid)]
    if missing:
        return (
            f"the log {log.path} has lost events its checkpoint knows ({len(missing)} "
            f"routed message(s), e.g. {missing[-1]}, are not in it)"
        )
    return None


def _lost_checkpoint(log: JsonlLog) -> str | None:
    if not log.path.exists() or log.path.stat().st_size == 0:
        return None
    events = log.tail_until(is_entry)
    if not events or not is_entry(events[0]):
        return None  # never entered: only human messages wait for the first run
    if all(is_entry(e) or e.from_person for e in events):
        return None  # entered, crashed before the checkpoint: the entry re-runs harmlessly
    return (
        f"its checkpoint is missing but its log {log.path} shows it ran (entered with epoch "
        f"{entry_meta(events[0]).epoch}, {len(events)} events since); run as it is, it "
        "would start over and repeat its SOP"
    )


class RebuildError(StorageError):
    """The log does not hold what a rebuild needs (say why; the room is left unchanged)."""


@dataclass(slots=True)
class Rebuilt:
    """The state a room gets back from its log, and where it goes on from."""

    values: dict[str, Any]
    resume_at: str
    """``human`` (waits for people), ``route`` (goes on with its run) or ``end`` (idle)."""
    from_event: str
    """The event the state was taken from (the last pause, the entry or the outcome)."""
    unrouted: list[str] = field(default_factory=list)
    """Human messages after that pause that were stored but not yet answered."""


_TURN_ID = re.compile(r"-t(\d{4})-(\d\d|msg)$")


def rebuild_state(
    events: list[Event], steps_now: Sequence[Mapping[str, Any]], sop_now: str | None
) -> Rebuilt | None:
    """The room's control state as its log records it; None if the room never entered.

    ``steps_now``/``sop_now`` are the current plan's, used only for logs written before the
    entry event recorded its steps, and only if the SOP version is the same.
    """
    start = max((i for i, e in enumerate(events) if is_entry(e)), default=None)
    if start is None:
        return None
    entry, after = events[start], events[start + 1 :]
    run = entry_meta(entry)
    epoch, sop, steps = run.epoch or "", run.sop, run.steps
    if steps is None:
        if sop != sop_now:
            raise RebuildError(
                f"the room entered on {sop}, its scenario now runs {sop_now}, and its entry "
                "event predates the step record a rebuild needs"
            )
        steps = list(steps_now)
    scenario = scenario_of(entry)
    values: dict[str, Any] = {
        **entry_state(epoch, scenario, sop, steps),
        "last_error": None,
        "inbox": [],
        "current": None,
        "stop_reason": None,
    }
    pause = max(
        (i for i, e in enumerate(after) if e.kind in (EventKind.WAIT, EventKind.OUTCOME)),
        default=None,
    )
    if pause is None and not steps:
        # A DM or a room without an SOP: free chat from its entry on, nothing to re-drive.
        return Rebuilt(_free_chat(values, after, None), "end", entry.id)
    if pause is None:
        # Never paused: from the entry, the run re-drives; its turns re-append their ids.
        return Rebuilt(values, "route", entry.id)
    mark = after[pause]
    if mark.kind == EventKind.WAIT:
        state = mark.meta.get("state")
        if not isinstance(state, dict):
            raise RebuildError(
                f"its last pause ({mark.id}) predates the state record a rebuild needs"
            )
        values.update({k: state.get(k) for k in SNAPSHOT_KEYS})
        unrouted = [e.id for e in after[pause + 1 :] if e.from_person]
        return Rebuilt(values, "human", mark.id, unrouted)
    # After its outcome the room chats freely: its counters come from the log itself.
    ended = payload_of(mark)
    outcome = ended if isinstance(ended, OutcomePayload) else None
    return Rebuilt(_free_chat(values, after, outcome), "end", mark.id)


def _free_chat(
    values: dict[str, Any], after: list[Event], outcome: OutcomePayload | None
) -> dict[str, Any]:
    # Turn ids must go on from the log's highest, or new replies would reuse (and lose to)
    # the ids of old ones.
    humans = [e.id for e in after if e.from_person]
    turn_ids = [int(m.group(1)) for e in after if (m := _TURN_ID.search(e.id))]
    last_human = max((i for i, e in enumerate(after) if e.from_person), default=-1)
    speakers = [  # not a message a schedule delivered: its author did not speak here
        e.author
        for e in after
        if e.kind == EventKind.MESSAGE and not e.from_person and "delivered" not in e.meta
    ]
    return {
        **values,
        **at_index((outcome and outcome.steps_done) or 0),
        "phase": "open",
        "turns": max([(outcome and outcome.turns) or 0, *(t + 1 for t in turn_ids)]),
        "run_turns": len(
            {m.group(1) for e in after[last_human + 1 :] if (m := _TURN_ID.search(e.id))}
        ),
        "consumed": humans[-50:],
        "last_speaker": speakers[-1] if speakers else None,
        "stop_reason": outcome.reason if outcome else None,
    }
