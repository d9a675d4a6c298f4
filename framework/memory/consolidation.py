"""Consolidation: fold old turns into dated HISTORY.md lines and durable facts into MEMORY.md.

When a session's unconsolidated messages exceed ``memory_window``, the oldest are summarised
in small batches, leaving the newest ``memory_window // 2`` raw. Each batch is three
idempotent writes in order: its HISTORY.md lines (tagged with the batch id, skipped if
already there), its facts (MEMORY.md dedupes), then a ``consolidation`` pointer event in
the session naming the last message it covers. A process killed anywhere in between leaves
either a finished batch or one the next run redoes without doubling anything, so nothing is
summarised twice or skipped.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from framework.errors import InputError, MemoryCapExceeded
from framework.language import snippet
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.memory.statements import Fact, stated_facts
from framework.prompts.environment import PromptRenderer
from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog

BATCH = 10
"""Messages summarised per batch (and per pointer event)."""


@dataclass(frozen=True, slots=True)
class Summary:
    """What one batch becomes: dated HISTORY.md lines and facts per person."""

    lines: list[str]
    facts: list[tuple[str, Fact]] = field(default_factory=list)
    """``(user, fact)``: the person the fact is about."""


Summariser = Callable[[list[Event], date], Awaitable[Summary]]


@dataclass(slots=True)
class ConsolidationReport:
    """What a consolidation run did."""

    batches: int = 0
    messages: int = 0
    history_lines: int = 0
    facts: int = 0
    refused_facts: list[str] = field(default_factory=list)
    """Facts MEMORY.md refused (over its cap); they stay in HISTORY.md."""


async def extractive_summary(messages: list[Event], day: date, humans: set[str]) -> Summary:
    """Deterministic summary (no model): one line per person's message with the reply to it."""
    lines: list[str] = []
    facts: list[tuple[str, Fact]] = []
    for i, event in enumerate(messages):
        if event.author not in humans:
            continue
        reply = next((m for m in messages[i + 1 :] if m.author not in humans), None)
        line = f"{day.isoformat()} {event.author}：{snippet(event.text, 60)}"
        if reply is not None:
            line += f" → {reply.author}：{snippet(reply.text, 40)}"
        lines.append(line)
        facts += [(event.author, fact) for fact in stated_facts(event.text)]
    if not lines and messages:
        authors = ", ".join(sorted({m.author for m in messages}))
        lines.append(f"{day.isoformat()} {authors} 交流了 {len(messages)} 条消息。")
    return Summary(lines, facts)


def extractive_summariser(humans: set[str]) -> Summariser:
    """:func:`extractive_summary` as a summariser (the offline path)."""

    async def summarise(messages: list[Event], day: date) -> Summary:
        return await extractive_summary(messages, day, humans)

    return summarise


def model_summariser(
    model: BaseChatModel, renderer: PromptRenderer, humans: set[str]
) -> Summariser:
    """Summarise with a chat model through ``consolidate.j2``; fall back to extractive."""

    async def summarise(messages: list[Event], day: date) -> Summary:
        transcript = "\n".join(f"{m.author}: {m.text}" for m in messages)
        prompt = renderer.render(
            "consolidate.j2", {"transcript": transcript, "day": day.isoformat(), "humans": humans}
        )
        try:
            reply = await model.ainvoke(
                [SystemMessage(content=prompt), HumanMessage(content=transcript)]
            )
            return _parse_summary(str(reply.content), day, humans)
        except Exception:  # a failing or rambling model must not lose the batch
            return await extractive_summary(messages, day, humans)

    return summarise


def _parse_summary(text: str, day: date, humans: set[str]) -> Summary:
    start, end = text.find("{"), text.rfind("}")
    data = json.loads(text[start : end + 1])
    lines = [
        f"{day.isoformat()} {str(x).strip()}" for x in data.get("history", []) if str(x).strip()
    ]
    facts = [
        (str(f["user"]), Fact(str(f["section"]), str(f["entry"])))
        for f in data.get("facts", [])
        if isinstance(f, dict) and f.get("user") in humans and f.get("entry")
    ]
    if not lines:
        raise ValueError("the model returned no history lines")
    return Summary(lines, facts)


def find_pointer(log: JsonlLog) -> tuple[Event | None, list[Event]]:
    """The newest consolidation pointer and the messages after what it covers (file order).

    Reads from the end of the log, so the cost follows the unconsolidated part only.
    """

    def messages(events: list[Event]) -> list[Event]:
        return [e for e in events if e.kind == EventKind.MESSAGE]

    since_pointer = log.tail_until(lambda e: e.kind == EventKind.CONSOLIDATION)
    pointer = since_pointer[0] if since_pointer else None
    if pointer is None or pointer.kind != EventKind.CONSOLIDATION:
        return None, messages(since_pointer)
    through = pointer.content.get("through") if isinstance(pointer.content, dict) else None
    since_through = log.tail_until(lambda e: e.id == through)
    if since_through and since_through[0].id == through:
        return pointer, messages(since_through[1:])
    # The covered message was edited away: trust the pointer's place.
    return pointer, messages(since_pointer)


class Consolidator:
    """Consolidates one session (see the module docstring)."""

    def __init__(
        self,
        *,
        log: JsonlLog,
        history: HistorySummary,
        memory_for: Callable[[str, str], MemoryFile],
        employees: Sequence[str],
        window: int,
        summarise: Summariser,
    ) -> None:
        self.log = log
        self.history = history
        self.memory_for = memory_for
        self.employees = list(employees)
        self.window = window
        self.summarise = summarise

    def pending(self) -> list[Event]:
        """Unconsolidated messages, oldest first."""
        return find_pointer(self.log)[1]

    async def run(self, *, force: bool = False) -> ConsolidationReport:
        """Consolidate while due (or everything but the newest half-window, with ``force``)."""
        report = ConsolidationReport()
        while True:
            pending = self.pending()
            keep = self.window // 2
            if len(pending) <= keep or (not force and len(pending) <= self.window):
                return report
            batch = pending[: min(BATCH, len(pending) - keep)]
            await self._batch(batch, report)

    async def _batch(self, batch: list[Event], report: ConsolidationReport) -> None:
        last = batch[-1]
        day = date.fromisoformat(batch[0].ts[:10])
        summary = await self.summarise(batch, day)
        self.history.append([(day, line) for line in summary.lines], batch_id=last.id)
        stored: list[str] = []
        for user, fact in summary.facts:
            for employee in self.employees:
                try:
                    self.memory_for(employee, user).add(fact.section, fact.entry)
                except (MemoryCapExceeded, InputError):
                    report.refused_facts.append(fact.entry)
                    continue
            stored.append(f"{user}/{fact.section}: {fact.entry}")
        content = {
            "through": last.id,
            "messages": len(batch),
            "history_lines": len(summary.lines),
            "facts": stored,
        }
        pointer = make_event(
            last.session, EventKind.CONSOLIDATION, "system", content, id=f"consolidated-{last.id}"
        )
        self.log.append(pointer)
        self.log.sync()
        report.batches += 1
        report.messages += len(batch)
        report.history_lines += len(summary.lines)
        report.facts += len(stored)
