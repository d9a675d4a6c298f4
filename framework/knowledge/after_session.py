"""What the knowledge layers do when a session ends: journals, then extraction, then routing.

Each employee who spoke gets a journal block for the session (idempotent by the session's
end id); one extraction run reads the session's messages and those journal blocks, the gate
re-scans when the yield is implausible, and every kept item is routed to its layer.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import date

from framework.knowledge.base import KnowledgeBase
from framework.knowledge.gate import ExtractionInput, ExtractionRun, Extractor, extract
from framework.knowledge.routing import Routed, Team, route
from framework.knowledge.session_notes import journal_entries, render_entries, spoke, transcript
from framework.sessions.events import Event


@dataclass(frozen=True, slots=True)
class SessionKnowledge:
    """What one session end did in the knowledge layers."""

    session: str
    journals: dict[str, int] = field(default_factory=dict)
    """Employee -> journal entries written (0: the block was there already)."""
    run: ExtractionRun | None = None
    """None when nobody spoke (nothing to extract)."""
    routed: list[Routed] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (the ``knowledge`` event's content)."""
        run = self.run
        return {
            "session": self.session,
            "journals": dict(self.journals),
            "by": list(run.by) if run else [],
            "gate": run.gate.as_dict() if run else None,
            "fallbacks": list(run.fallbacks) if run else [],
            "routed": [r.as_dict() for r in self.routed],
        }


async def after_session(
    kb: KnowledgeBase,
    events: list[Event],
    *,
    session: str,
    employees: list[str],
    humans: list[str],
    extractor: Extractor,
    day: date,
    entry_id: str,
) -> SessionKnowledge:
    """Journal, extract and route one ended session (``events``: its span of the log)."""
    speakers = spoke(events, employees)
    if not speakers:
        return SessionKnowledge(session)
    journals: dict[str, int] = {}
    blocks: list[str] = []
    for employee in speakers:
        entries = journal_entries(events, employee)
        wrote = await asyncio.to_thread(
            kb.journal.append, employee, day, session, entries, entry_id=entry_id
        )
        journals[employee] = len(entries) if wrote else 0
        blocks.append(render_entries(employee, entries))
    text = "\n\n".join([transcript(events), *blocks])
    run = await extract(ExtractionInput(speakers[0], session, text), extractor)
    team = Team(employees=employees, humans=humans, owner=speakers[0])
    routed = await asyncio.to_thread(route, run.items, kb, team, session=session)
    return SessionKnowledge(session, journals, run, routed)
