"""A room run's outcome, read from its events: success, corrections, duration, off-SOP turns.

Pure: it looks only at the events of one run (from the room's entry or its last outcome to
the end), so the same history always gives the same outcome.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from framework.sessions.events import Event, EventKind
from framework.sop.model import Correction, Outcome
from framework.sop.reviser import parse_correction

# "评分: 4/5", "score 0.8", "打分 80%": a person's verdict on the run.
_SCORE = re.compile(
    r"(?:评分|打分|score|rating)\s*[:：=]?\s*(\d+(?:\.\d+)?)\s*(?:/\s*(\d+)|(%))?", re.IGNORECASE
)
SUCCESS_AT = 0.6
"""A stated score at or above this counts as success."""


def stated_score(text: str) -> float | None:
    """A 0..1 score stated in ``text`` ("评分: 4/5", "score 0.8", "打分 80%"), if any."""
    match = _SCORE.search(text)
    if not match:
        return None
    value = float(match.group(1))
    if match.group(2):
        value /= float(match.group(2)) or 1.0
    elif match.group(3) or value > 1:
        value /= 100 if match.group(3) or value > 10 else 10
    return max(0.0, min(1.0, value))


def _seconds(start: str, end: str) -> float:
    def parse(ts: str) -> datetime:
        return datetime.fromisoformat(ts.replace("Z", "+00:00"))

    return max(0.0, (parse(end) - parse(start)).total_seconds())


def run_outcome(events: Sequence[Event], *, sop_ref: str, session: str, reason: str) -> Outcome:
    """The outcome of the run whose events are ``events`` (entry to end, in order).

    Corrections come from people and from models alike (an employee, say a reviewer, may
    write ``纠正: ...`` too); ``by`` tells them apart. Success is a person's stated score when
    there is one, else: the SOP completed and nobody corrected it. Off-SOP turns are
    employee turns not driven by an SOP step.
    """
    messages = [e for e in events if e.kind == EventKind.MESSAGE]
    humans = [e for e in messages if e.meta.get("human")]
    replies = [e for e in messages if not e.meta.get("human")]
    corrections: list[Correction] = []
    score: float | None = None
    for message in messages:
        parsed = (parse_correction(line) for line in message.text.splitlines())
        for correction in (c for c in parsed if c is not None):
            corrections.append(
                Correction(
                    kind=correction.kind,
                    detail=correction.detail,
                    step=correction.step,
                    by=message.author,
                    speaker=correction.speaker,
                    do=correction.do,
                    before=correction.before,
                )
            )
        if message.meta.get("human"):
            stated = stated_score(message.text)
            score = stated if stated is not None else score
    success = (
        score >= SUCCESS_AT if score is not None else (reason == "sop_complete" and not corrections)
    )
    return Outcome(
        sop_ref=sop_ref,
        session=session,
        success=success,
        score=score,
        corrections=tuple(corrections),
        duration_s=_seconds(events[0].ts, events[-1].ts) if events else 0.0,
        off_sop_turns=sum(1 for e in replies if e.meta.get("why") != "sop_step"),
        human_interventions=len(humans),
        user=humans[-1].author if humans else "",
        at=events[-1].ts if events else "",
    )
