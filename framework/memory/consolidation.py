"""Consolidation: fold old turns into dated HISTORY.md lines and durable facts into MEMORY.md.

When a session's unconsolidated messages exceed ``memory_window``, the oldest are summarised
in small batches, leaving the newest ``memory_window // 2`` raw. Each batch is three
idempotent writes in order: its HISTORY.md lines (tagged with the batch id, skipped if
already there), its facts (MEMORY.md dedupes), then a ``consolidation`` pointer event in
the session naming the last message it covers. A process killed anywhere in between leaves
either a finished batch or one the next run redoes without doubling anything, so nothing is
summarised twice or skipped.

A model summarises through :func:`~framework.models.structured.ask_structured`; when it
cannot be called or its answer stays unusable after one retry, the batch gets the extractive
summary instead (nothing is lost), and the consolidator records a ``fallback`` event saying
why, which the report carries too.

Every fact and HISTORY.md line passes the write gate (:mod:`~framework.memory.write_gate`)
on either path; a model's facts are also judged against what the people in the batch said.
Each refused fact is a ``fallback`` event too, in the language the people wrote in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from framework.errors import InputError, MemoryCapExceeded
from framework.language import is_english, snippet
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile, clean_entry
from framework.memory.write_gate import judge, judge_history_line
from framework.models.profile import ModelProfile
from framework.models.structured import answer_format, ask_structured
from framework.phrases import Phrase
from framework.prompts.environment import PromptRenderer
from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.statements import Fact, stated_facts

BATCH = 10
"""Messages summarised per batch (and per pointer event)."""

EXCHANGED = Phrase(en="{authors} exchanged {n} messages.", zh="{authors} 交流了 {n} 条消息。")
NOT_STORED = Phrase(en="fact not stored in MEMORY.md", zh="这条事实没有写入 MEMORY.md")
REFUSED_FACT = Phrase(en="{user}: {entry!r}: {reason}", zh="{user}：{entry!r}：{reason}")
ALL_LINES_REFUSED = Phrase(
    en="every history line was refused by the write gate ({reason})",
    zh="每一行历史都被写入关卡拒绝（{reason}）",
)


def language_of_people(messages: Sequence[Event], humans: set[str]) -> str:
    """``en`` when what the people said is English, else ``zh`` (what their records say in)."""
    said = " ".join(m.text for m in messages if m.author in humans)
    return "en" if is_english(said) else "zh"


@dataclass(frozen=True, slots=True)
class Summary:
    """What one batch becomes: dated HISTORY.md lines and facts per person."""

    lines: list[str]
    facts: list[tuple[str, Fact]] = field(default_factory=list)
    """``(user, fact)``: the person the fact is about."""
    fallback: str | None = None
    """Why this is the extractive summary although a model was asked (None: it is not)."""
    call_failed: bool = False
    """The fallback's cause: the model could not be called (not just a bad answer)."""
    by_model: bool = False
    """A model wrote the facts: they are judged against what the people said."""


class FactAnswer(BaseModel):
    """One durable fact about a person, as a model states it."""

    user: str
    section: Literal["identity", "project", "preferences", "facts"]
    entry: str = Field(min_length=1)


class SummaryAnswer(BaseModel):
    """The JSON a model answers ``consolidate.j2`` with."""

    history: list[str] = Field(min_length=1)
    facts: list[FactAnswer] = Field(default_factory=list)


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
    summarised_by: str = ""
    """The model's label, or ``extractive (offline simulator)``."""
    fallbacks: list[str] = field(default_factory=list)
    """Why a batch got the extractive summary instead of the model's, one per such batch."""
    call_failed: bool = False
    """A fallback happened because the model could not be called at all (server down...)."""


async def extractive_summary(messages: list[Event], day: date, humans: set[str]) -> Summary:
    """Deterministic summary (no model): one line per person's message with the reply to it."""
    lines: list[str] = []
    facts: list[tuple[str, Fact]] = []
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
        facts += [(event.author, fact) for fact in stated_facts(event.text)]
    if not lines and messages:
        authors = ", ".join(sorted({m.author for m in messages}))
        lines.append(f"{day.isoformat()} {EXCHANGED(language, authors=authors, n=len(messages))}")
    return Summary(lines, facts)


def extractive_summariser(humans: set[str]) -> Summariser:
    """:func:`extractive_summary` as a summariser (the offline path)."""

    async def summarise(messages: list[Event], day: date) -> Summary:
        return await extractive_summary(messages, day, humans)

    return summarise


def model_summariser(
    model: BaseChatModel,
    renderer: PromptRenderer,
    humans: set[str],
    profile: ModelProfile,
    *,
    retries: int = 2,
    backoff: float = 1.0,
) -> Summariser:
    """Summarise with a chat model through ``consolidate.j2``; fall back to extractive.

    A summary that fell back says why (:attr:`Summary.fallback`). Once a call has failed,
    the rest of this summariser's batches skip the model: a server that is down would
    otherwise be waited on (and retried) once per batch.
    """
    people = sorted(humans)
    example = SummaryAnswer(
        history=["<who asked what; what was decided>"],
        facts=[
            FactAnswer(
                user=f"<one of: {', '.join(people)}>", section="facts", entry="<key>: <value>"
            )
        ],
    )
    fmt = answer_format(SummaryAnswer, [example])
    unreachable: str | None = None

    def check(answer: SummaryAnswer) -> str | None:
        # Small models under a grammar copy the example or fill the array with punctuation.
        if set(answer.history) <= set(example.history):
            return "it repeats the example instead of summarising the transcript"
        if not any(any(ch.isalnum() for ch in line) for line in answer.history):
            return "history has no line with words in it"
        refused = [judge_history_line(line) for line in answer.history]
        if all(refused):
            return ALL_LINES_REFUSED("en", reason=refused[0].reason if refused[0] else "")
        return None

    async def summarise(messages: list[Event], day: date) -> Summary:
        nonlocal unreachable
        if unreachable is None:
            # Half the input budget for the transcript, shared by its messages: a batch
            # always fits a small window, and a summary needs only the gist.
            cap = max(80, profile.input_budget // (2 * max(1, len(messages))))
            transcript = "\n".join(f"{m.author}: {snippet(m.text, cap)}" for m in messages)
            context = {"day": day.isoformat(), "humans": people, "answer_format": fmt}
            language = language_of_people(messages, humans)
            prompt = renderer.render("consolidate.j2", context, language=language)
            answer = await ask_structured(
                model,
                [SystemMessage(content=prompt), HumanMessage(content=transcript)],
                SummaryAnswer,
                profile,
                examples=[example],
                check=check,
                retries=retries,
                backoff=backoff,
            )
            if answer.value is not None:
                return _summary_of(answer.value, day, humans)
            reason, failed = answer.fallback_reason or "no answer", answer.call_failed
            if failed:
                unreachable = reason
        else:
            reason, failed = unreachable, True
        extractive = await extractive_summary(messages, day, humans)
        return Summary(extractive.lines, extractive.facts, fallback=reason, call_failed=failed)

    return summarise


def _summary_of(answer: SummaryAnswer, day: date, humans: set[str]) -> Summary:
    # A line the gate refuses (a timestamp, a placeholder, a log) tells no one anything.
    lines = [
        f"{day.isoformat()} {x.strip()}"
        for x in answer.history
        if x.strip() and judge_history_line(x) is None
    ]
    # A fact about someone who is not a person here (or the example's placeholder) is dropped.
    facts = [(f.user, Fact(f.section, f.entry)) for f in answer.facts if f.user in humans]
    return Summary(lines, facts, by_model=True)


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
        humans = {e.author for e in batch if e.meta.get("human")} | {user}
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
        summary = await self.summarise(batch, day)
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
        stored: list[str] = []
        for n, (user, fact) in enumerate(summary.facts, start=1):
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
                    self.memory_for(employee, user).add(
                        fact.section,
                        fact.entry,
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
