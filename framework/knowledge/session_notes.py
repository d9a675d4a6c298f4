"""What a session leaves for the knowledge layers: each employee's journal entries, and the
text an extraction pass reads.

Journal entries are raw working notes taken from the session's own events, no model needed:
what the employee said (with the SOP step it was on), what it wrote to the workspace, what
went another way than asked (fallbacks, errors), the run's measured outcome, and the open
questions asked in the session.
"""

from __future__ import annotations

import re

from framework.knowledge.journal import JournalEntry
from framework.language import snippet
from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import (
    ErrorPayload,
    FallbackPayload,
    FeedbackPayload,
    ToolCallPayload,
    message_step,
    payload_of,
)

NOTE_CHARS = 240
"""A note keeps this much of a message (the session's log keeps all of it)."""
_QUESTION = re.compile(r"[^。！？!?\n]{4,}[？?]")


def spoke(events: list[Event], employees: list[str]) -> list[str]:
    """The employees (of ``employees``, in that order) who said something in ``events``."""
    authors = {e.author for e in events if e.kind == EventKind.MESSAGE}
    return [e for e in employees if e in authors]


def journal_entries(events: list[Event], employee: str) -> list[JournalEntry]:
    """``employee``'s journal entries for one session span (empty when it took no part)."""
    entries: list[JournalEntry] = []
    asked: list[str] = []
    for event in events:
        said = payload_of(event)
        if event.kind == EventKind.MESSAGE:
            if event.author == employee:
                step = message_step(event)
                where = f"step {step}: " if step else ""
                entries.append(JournalEntry("note", where + snippet(event.text, NOTE_CHARS)))
            asked += [q.strip() for q in _QUESTION.findall(event.text)]
        elif event.author != employee:
            if isinstance(said, FeedbackPayload):
                verdict = "success" if said.success else "not a success"
                run = f"run on {said.sop}: {verdict}"
                entries.append(JournalEntry("observation", f"{run}, score {said.score}"))
        elif isinstance(said, ToolCallPayload) and said.name == "write_file":
            path = said.args.get("path")
            entries.append(JournalEntry("observation", f"wrote {path} to the workspace"))
        elif isinstance(said, FallbackPayload | ErrorPayload):
            what = said.used if isinstance(said, FallbackPayload) else said.detail or said.error
            entries.append(JournalEntry("observation", f"{event.kind}: {snippet(str(what), 160)}"))
    if not any(e.kind == "note" for e in entries):
        return []
    entries += [JournalEntry("question", q) for q in dict.fromkeys(asked)]
    return entries


def transcript(events: list[Event]) -> str:
    """The session's messages as ``author: text`` lines (what extraction reads)."""
    return "\n".join(f"{e.author}: {e.text}" for e in events if e.kind == EventKind.MESSAGE)


def render_entries(employee: str, entries: list[JournalEntry]) -> str:
    """Journal entries as the lines an extraction pass reads."""
    head = f"# {employee} journal"
    return "\n".join([head, *(f"- {e.kind}: {e.text}" for e in entries)])
