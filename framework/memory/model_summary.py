"""Consolidation by a chat model: ``consolidate.j2``, the answer it must give, and the fall
back to the extractive summary when the answer stays unusable.

The prompt shows the people's current MEMORY.md entries, numbered (within a quarter of the
input budget), so a fact may say which one it replaces (``replaces``); a number that names no
entry shown for that person is ignored with a ``fallback`` event and the fact is added as a
new one (:func:`~framework.memory.supersede.resolve`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Annotated, Any, Literal

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, BeforeValidator, Field, WithJsonSchema

from framework.language import snippet
from framework.memory.consolidation import (
    Summariser,
    Summary,
    extractive_summary,
    language_of_people,
)
from framework.memory.supersede import KnownEntry, NewFact, numbered, resolve
from framework.memory.write_gate import judge_history_line
from framework.models.profile import ModelProfile
from framework.models.structured import answer_format, ask_structured
from framework.phrases import Phrase
from framework.prompts.environment import PromptRenderer
from framework.sessions.events import Event
from framework.statements import Fact

__all__ = ["FactAnswer", "SummaryAnswer", "model_summariser"]

ALL_LINES_REFUSED = Phrase(
    en="every history line was refused by the write gate ({reason})",
    zh="每一行历史都被写入关卡拒绝（{reason}）",
)


def _as_given(value: Any) -> Any:
    """A ``replaces`` that is no number or text (``true``, ``[2]``) is kept as its JSON text,
    to be ignored with a reason (:func:`~framework.memory.supersede.resolve`): one odd field
    must not cost the whole summary a retry."""
    ok = value is None or (isinstance(value, int | str) and not isinstance(value, bool))
    return value if ok else json.dumps(value)


class FactAnswer(BaseModel):
    """One durable fact about a person, as a model states it."""

    user: str
    section: Literal["identity", "project", "preferences", "facts"]
    entry: str = Field(min_length=1)
    replaces: Annotated[
        int | str | None,
        BeforeValidator(_as_given),
        WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ] = None
    """The number of the current entry this fact updates (None: a new fact); asked for as an
    integer, read leniently ("2", "#2")."""


class SummaryAnswer(BaseModel):
    """The JSON a model answers ``consolidate.j2`` with."""

    history: list[str] = Field(min_length=1)
    facts: list[FactAnswer] = Field(default_factory=list)


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

    async def summarise(messages: list[Event], day: date, known: Sequence[KnownEntry]) -> Summary:
        nonlocal unreachable
        if unreachable is None:
            # Half the input budget for the transcript, shared by its messages: a batch
            # always fits a small window, and a summary needs only the gist.
            cap = max(80, profile.input_budget // (2 * max(1, len(messages))))
            transcript = "\n".join(f"{m.author}: {snippet(m.text, cap)}" for m in messages)
            # A quarter for the current entries: a fact may say which one it replaces.
            shown, entries = numbered(known, profile.input_budget // 4)
            context: dict[str, object] = {"day": day.isoformat(), "humans": people}
            context |= {
                "answer_format": fmt,
                "entries": entries,
                "unshown": len(known) - len(shown),
            }
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
                return _summary_of(answer.value, day, humans, shown, language)
            reason, failed = answer.fallback_reason or "no answer", answer.call_failed
            if failed:
                unreachable = reason
        else:
            reason, failed = unreachable, True
        extractive = await extractive_summary(messages, day, humans, known)
        return Summary(extractive.lines, extractive.facts, fallback=reason, call_failed=failed)

    return summarise


def _summary_of(
    answer: SummaryAnswer, day: date, humans: set[str], shown: Sequence[KnownEntry], lang: str
) -> Summary:
    # A line the gate refuses (a timestamp, a placeholder, a log) tells no one anything.
    lines = [
        f"{day.isoformat()} {x.strip()}"
        for x in answer.history
        if x.strip() and judge_history_line(x) is None
    ]
    # A fact about someone who is not a person here (or the example's placeholder) is dropped.
    facts, ignored = [], []
    for f in (f for f in answer.facts if f.user in humans):
        old, why = resolve(f.user, f.entry, f.replaces, shown, lang)
        facts.append(NewFact(f.user, Fact(f.section, f.entry), old))
        ignored += [why] if why else []
    return Summary(lines, facts, by_model=True, ignored=ignored)
