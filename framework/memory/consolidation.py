"""Consolidation: fold old turns into dated HISTORY.md lines and durable facts into MEMORY.md.

When a session's unconsolidated messages exceed ``memory_window``, the oldest are summarised
in small batches, leaving the newest ``memory_window // 2`` raw. Each batch is three
idempotent writes in order: its HISTORY.md lines (tagged with the batch id, skipped if
already there), its facts (MEMORY.md dedupes), then a ``consolidation`` pointer event in
the session naming the last message it covers. A process killed anywhere in between leaves
either a finished batch or one the next run redoes without doubling anything, so nothing is
summarised twice or skipped.

A model summarises (:mod:`~framework.memory.model_summary`); when it cannot be called or its
answer stays unusable after one retry, the batch gets the extractive summary instead (nothing
is lost), and the consolidator records a ``fallback`` event saying why, which the report
carries too.

A fact that updates an entry replaces it (:mod:`~framework.memory.supersede`). Every fact and
HISTORY.md line passes the write gate (:mod:`~framework.memory.write_gate`) on either path; a
model's facts are also judged against what the people in the batch said. Each refused fact
is a ``fallback`` event too, in the language the people wrote in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from framework.errors import InputError, MemoryCapExceeded
from framework.language import is_english, snippet
from framework.memory.entries import clean_entry
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.memory.supersede import (
    KnownEntry,
    NewFact,
    known_entries,
    rule_updates,
)
from framework.memory.write_gate import judge
from framework.phrases import Phrase
from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.payloads import ConsolidationPayload, payload_of
from framework.statements import stated_facts

BATCH = 10
"""Messages summarised per batch (and per pointer event)."""

EXCHANGED = Phrase(
    en="{authors} exchanged {n} messages.",
    zh="{authors} 交流了 {n} 条消息。",
)
NOT_STORED = Phrase(
    en="fact not stored in MEMORY.md",
    zh="这条事实没有写入 MEMORY.md",
)
REFUSED_FACT = Phrase(
    en="{user}: {entry!r}: {reason}",
    zh="{user}：{entry!r}：{reason}",
)


def language_of_people(messages: Sequence[Event], humans: set[str]) -> str:
    """``en`` when what the people said is English, else ``zh`` (what their records say in)."""
    said = " ".join(m.text for m in messages if m.author in humans)
    return "en" if is_english(said) else "zh"


@dataclass(frozen=True, slots=True)
class Summary:
    """What one batch becomes: dated HISTORY.md lines and facts per person."""

    lines: list[str]
    facts: list[NewFact] = field(default_factory=list)
    """Each fact, the person it is about, and the entry it replaces."""
    fallback: str | None = None
    """Why this is the extractive summary although a model was asked (None: it is not)."""
    call_failed: bool = False
    """The fallback's cause: the model could not be called (not just a bad answer)."""
    by_model: bool = False
    """A model wrote the facts: they are judged against what the people said."""
    ignored: list[dict[str, str]] = field(default_factory=list)
    """``fallback`` events: a model's ``replaces`` ignored (the fact added as a new one)."""


Summariser = Callable[[list[Event], date, Sequence[KnownEntry]], Awaitable[Summary]]
"""Summarises a batch, given the people's current MEMORY.md entries."""


@dataclass(slots=True)
class ConsolidationReport:
    """What a consolidation run did."""

    batches: int = 0
    messages: int = 0
    history_lines: int = 0
    facts: int = 0
    refused_facts: list[str] = field(default_factory=list)
    """Facts MEMORY.md refused (over its cap); they stay in HISTORY.md."""
    summarised_by: str = ""
    """The model's label, or ``extractive (offline simulator)``."""
    fallbacks: list[str] = field(default_factory=list)
    """Why a batch got the extractive summary instead of the model's, one per such batch."""
    call_failed: bool = False
    """A fallback happened because the model could not be called at all (server down...)."""


async def extractive_summary(
    messages: list[Event], day: date, humans: set[str], known: Sequence[KnownEntry] = ()
) -> Summary:
    """Deterministic summary (no model): one line per person's message with the reply to it;
    the facts the rules recognise, and messages that update a ``known`` entry."""
    lines: list[str] = []
    facts: list[NewFact] = []
    language = language_of_people(messages, humans)
    colon = ": " if language == "en" else "："
    for i, event in enumerate(messages):
        if event.author not in humans:
            continue
        reply = next((m for m in messages[i + 1 :] if m.author not in humans), None)
        line = f"{day.isoformat()} {event.author}{colon}{snippet(event.text, 60)}"
        if reply is not None:
            line += f" → {reply.author}{colon}{snippet(reply.text, 40)}"
        lines.append(line)
        facts += [NewFact(event.author, fact) for fact in stated_facts(event.text)]
    if not lines and messages:
        authors = ", ".join(sorted({m.author for m in messages}))
        lines.append(f"{day.isoformat()} {EXCHANGED(language, authors=authors, n=len(messages))}")
    facts += rule_updates(messages, humans, known, {f.fact.entry for f in facts})
    return Summary(lines, facts)


def extractive_summariser(humans: set[str]) -> Summariser:
    """:func:`extractive_summary` as a summariser (the offline path)."""

    async def summarise(messages: list[Event], day: date, known: Sequence[KnownEntry]) -> Summary:
        return await extractive_summary(messages, day, humans, known)

    return summarise


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
    said = payload_of(pointer)
    through = said.through if isinstance(said, ConsolidationPayload) else None
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
        summarised_by: str = "extractive",
    ) -> None:
        self.log = log
        self.history = history
        self.memory_for = memory_for
        self.employees = list(employees)
        self.window = window
        self.summarise = summarise
        self.summarised_by = summarised_by

    def pending(self) -> list[Event]:
        """Unconsolidated messages, oldest first."""
        return find_pointer(self.log)[1]

    async def run(self, *, force: bool = False, everything: bool = False) -> ConsolidationReport:
        """Consolidate while due (``force``: all but the newest half-window; ``everything``:
        all of it, as at the end of a session)."""
        report = ConsolidationReport(summarised_by=self.summarised_by)
        keep = 0 if everything else self.window // 2
        force = force or everything
        while True:
            pending = await asyncio.to_thread(self.pending)
            if len(pending) <= keep or (not force and len(pending) <= self.window):
                return report
            batch = pending[: min(BATCH, len(pending) - keep)]
            await self._batch(batch, report)

    def _refusal(
        self, batch: list[Event], summary: Summary, user: str, entry: str
    ) -> dict[str, str] | None:
        """The fallback event's content when the write gate refuses ``entry``, else None.

        A model's fact is judged against what its person said in the batch: a profile
        nobody stated is refused there, whatever it is labelled.
        """
        humans = {e.author for e in batch if e.from_person} | {user}
        language = language_of_people(batch, humans)
        said = "\n".join(e.text for e in batch if e.author == user)
        try:
            refused = judge(
                clean_entry(entry), heard=said if summary.by_model else None, language=language
            )
        except InputError as exc:
            reason = exc.message
        else:
            if refused is None:
                return None
            reason = refused.reason
        return {
            "what": "memory",
            "used": NOT_STORED(language),
            "reason": REFUSED_FACT(language, user=user, entry=entry, reason=reason),
        }

    async def _batch(self, batch: list[Event], report: ConsolidationReport) -> None:
        day = date.fromisoformat(batch[0].ts[:10])
        humans = {e.author for e in batch if e.from_person}
        # What the summarising employee (the first) keeps about them: a fact may replace one.
        known = await asyncio.to_thread(known_entries, self.memory_for, self.employees[0], humans)
        summary = await self.summarise(batch, day, known)
        # The writes take file locks and fsync: off the event loop, as the memory tool does.
        await asyncio.to_thread(self._write, batch, summary, report)

    def _write(self, batch: list[Event], summary: Summary, report: ConsolidationReport) -> None:
        last = batch[-1]
        day = date.fromisoformat(batch[0].ts[:10])
        if summary.fallback is not None:
            # Said before anything is written; its id makes a redone batch say it once.
            said = {"what": "consolidation", "used": "extractive", "reason": summary.fallback}
            said["through"] = last.id
            event = make_event(
                last.session, EventKind.FALLBACK, "system", said, id=f"fallback-{last.id}"
            )
            self.log.append(event)
            report.fallbacks.append(summary.fallback)
            report.call_failed = report.call_failed or summary.call_failed
        self.history.append([(day, line) for line in summary.lines], batch_id=last.id)
        for n, said in enumerate(summary.ignored, start=1):
            ignored = f"fallback-{last.id}-r{n}"
            self.log.append(
                make_event(last.session, EventKind.FALLBACK, "system", said, id=ignored)
            )
        stored: list[str] = []
        for n, new in enumerate(summary.facts, start=1):
            user, fact = new.user, new.fact
            refusal = self._refusal(batch, summary, user, fact.entry)
            if refusal is not None:
                event = make_event(
                    last.session,
                    EventKind.FALLBACK,
                    "system",
                    refusal,
                    id=f"fallback-{last.id}-fact-{n}",
                )
                self.log.append(event)
                report.refused_facts.append(fact.entry)
                continue
            for employee in self.employees:
                try:
                    new.write(
                        self.memory_for(employee, user),
                        source=f"consolidation:{self.history.path.parent.name}",
                    )
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
