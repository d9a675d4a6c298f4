"""SOP drafts nobody asked for (seed 000 §5.1, path 1): when a session is worth one, and
proposing it.

The seed distils a draft "when a task is finished, or when the user says 把这套做法记下来".
The phrase is :func:`~framework.sop.extraction.is_save_request`; this module holds the two
pure rules for the unasked case, so they can be read and tested without a room:

* :func:`done_report`: an employee's reply *reports* the task finished: one of its sentences
  ends with a completion phrase that names the whole task or nothing else (``任务完成``,
  ``所有步骤都已完成``, ``已完成。``, ``搞定了！``, ``大功告成``, ``task complete``,
  ``all done``, ``everything is finished``, ``I have finished the task``, ``Done.``), and
  that sentence is neither negated (``还没完成``, ``not done yet``) nor a question
  (``任务完成了吗？``). A part is not the task: ``第一步已完成``, ``初稿已完成``,
  ``step 1 is done``, ``I'll get it done`` are not reports.
* :func:`assess`: the span (the events since the session's start or its last extraction)
  shows a procedure: at least :data:`MIN_WORK_TURNS` employee replies with text and at
  least :data:`MIN_TOOL_CALLS` call of a working tool (any but the ``memory`` tool, which
  only notes facts about the person). The draft made from it must also have at least
  :data:`MIN_STEPS` distinct steps (checked by :func:`propose` on the draft).

:func:`propose` stores the draft of the *span*: the events since the session's start (its
last ``session_end``) or its last ``extraction`` event, whether a person asked for that one
or not. So a person's "把这套做法记下来" already handled in the span leaves nothing to propose
for it, and a span is never distilled twice. Nothing is proposed

* when ``Settings.sop_auto_extract`` or the scenario's ``settings.sop_auto_extract`` is off;
* in a room driven by an SOP: its runs already propose the SOP's next version from their
  outcomes (:func:`~framework.sop.run_feedback.close_run`);
* when the span is not worth keeping, or its draft has fewer than ``MIN_STEPS`` steps.

The draft waits for review like any other (never published here), and an ``extraction``
event tells the person what was proposed, why, and how to review it. The hooks that call it
are registered by :mod:`framework.sop.extension`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from framework.extensions.context import HookContext
from framework.sessions.events import Event, EventKind
from framework.sessions.keys import Channel
from framework.sessions.payloads import ToolCallPayload, payload_of
from framework.sop.extraction import extract_draft
from framework.sop.model import SopVersion, Status
from framework.sop.service import SopService
from framework.sop.store import SopStore

MIN_WORK_TURNS = 3
"""Employee replies (with text) a span needs before it can become a draft by itself."""
MIN_TOOL_CALLS = 1
"""Calls of a working tool a span needs: talk alone is not a procedure to keep."""
MIN_STEPS = 2
"""Distinct steps the distilled draft needs: one step is a task, not a way of working."""
IGNORED_TOOLS = frozenset({"memory"})
"""Tools that are not work on the task (the memory tool notes facts about the person)."""


class Trigger(StrEnum):
    """What proposed an automatic draft (the ``trigger`` of its ``extraction`` event)."""

    TASK_DONE = "task_done"
    """An employee's reply reported the task finished."""
    SESSION_END = "session_end"
    """The session ended (closed, or idle past ``Settings.session_idle``)."""


_VERB_ZH = r"(?:完成|做完|搞定|完工|办妥|弄好|做好|结束)"
# Every alternative is anchored to the sentence's end, and names the whole task (任务, 全部,
# all, everything) or nothing at all: "第一步已完成" and "step 1 is done" report a part.
_DONE_ZH = (
    r"(?:^|[，,、：:\s])(?:这个|这项|本次|此次|整个)?(?:任务|工作|事情|活儿?|"
    r"(?:所有|全部)(?:任务|工作|步骤|事项)?)\s*(?:都|均|全部)?\s*(?:已经?|都)?\s*"
    rf"(?:全部|都)?\s*{_VERB_ZH}了?"
    rf"|(?:^|[，,、：:；;\s])(?:我们?)?\s*(?:已经?|都|全部|终于)*\s*{_VERB_ZH}了?"
    r"|大功告成"
)
_DONE_EN = (
    r"\b(?:all(?:\s+(?:steps|tasks|work))?|everything|(?:(?:the|this|my|our)\s+)?"
    r"(?:task|work|job))(?:\s+(?:is|are|has\s+been|have\s+been))?(?:\s+now)?\s+"
    r"(?:complete|completed|done|finished)"
    r"|^(?:i|we)(?:'ve|\s+have)?\s+(?:now\s+)?(?:finished|completed)"
    r"(?:\s+(?:the|this|my|our|all))?(?:\s+(?:task|tasks|work|job))?"
    r"|^(?:task\s+)?(?:done|finished|complete|completed)"
)
# What a report may end with: punctuation, spaces, a smiley or a check mark.
_TAIL = r"[\s。．.！!~～…✅✓🎉]*$"
_DONE = re.compile(rf"(?:{_DONE_ZH}|{_DONE_EN}){_TAIL}", re.IGNORECASE)
# A negation right before the verb ("还没完成", "尚未做完"), or anywhere in an English one.
_NEGATED_ZH = re.compile(rf"(?:未|没有?|不|别)\s*(?:全部|都)?\s*{_VERB_ZH}")
_NEGATED_EN = re.compile(r"\b(?:not|never|yet)\b|n't\b", re.IGNORECASE)
_QUESTION = re.compile(r"[?？]|[吗呢么][\s。.！!~～…]*$")


def _sentences(text: str) -> list[str]:
    """The reply's sentences, each with its closing punctuation."""
    flat = text.replace("[simulated]", "")
    # An English full stop ends a sentence only before a space or the end ("v1.2" stays whole).
    flat = re.sub(r"\.(?=\s|$)", ".\n", flat)
    parts = re.split(r"(?<=[。！？!?\n])", flat)
    return [p.strip() for p in parts if re.search(r"\w", p)]


def done_report(text: str) -> str | None:
    """The sentence of ``text`` (an employee's reply) that reports the task finished, or None.

    A report is a sentence ending with a completion phrase, neither negated nor a question;
    the sentence is what the person is shown as the reason for the draft.
    """
    for sentence in _sentences(text):
        if _QUESTION.search(sentence):
            continue
        if _NEGATED_ZH.search(sentence) or _NEGATED_EN.search(sentence):
            continue
        if _DONE.search(sentence):
            return sentence
    return None


@dataclass(frozen=True, slots=True)
class Assessment:
    """Whether a span shows a procedure worth a draft, and the counts that decided it."""

    work_turns: int
    tool_calls: int
    tools: tuple[str, ...]
    """The working tools called, in first-use order."""

    @property
    def worth_keeping(self) -> bool:
        """At least :data:`MIN_WORK_TURNS` replies and :data:`MIN_TOOL_CALLS` tool calls."""
        return self.work_turns >= MIN_WORK_TURNS and self.tool_calls >= MIN_TOOL_CALLS

    def summary(self) -> str:
        """The counts in a person's words, e.g. ``3 employee turns, tools: write_file``."""
        tools = ", ".join(self.tools) or "none"
        return f"{self.work_turns} employee turns, tools: {tools}"


def assess(span: Sequence[Event], employees: Collection[str]) -> Assessment:
    """Count the work in ``span``: replies with text by ``employees`` and working tool calls."""
    turns = calls = 0
    tools: list[str] = []
    for event in span:
        if event.kind == EventKind.MESSAGE and event.author in employees:
            # A message a schedule delivered here from another session is no work done here.
            if not event.from_person and event.text.strip() and "delivered" not in event.meta:
                turns += 1
        elif isinstance(call := payload_of(event), ToolCallPayload):
            name = str(call.name)
            if name not in IGNORED_TOOLS:
                calls += 1
                if name not in tools:
                    tools.append(name)
    return Assessment(work_turns=turns, tool_calls=calls, tools=tuple(tools))


def reason(trigger: Trigger, assessment: Assessment, *, employee: str = "", said: str = "") -> str:
    """Why the draft was proposed, in a person's words (the event's ``why``, the change log)."""
    if trigger == Trigger.TASK_DONE:
        head = f"{employee} reported the task done (「{said}」)"
    else:
        head = f"the session ended ({said})" if said else "the session ended"
    return f"proposed without being asked: {head}; {assessment.summary()}"


__all__ = [
    "IGNORED_TOOLS",
    "MIN_STEPS",
    "MIN_TOOL_CALLS",
    "MIN_WORK_TURNS",
    "Assessment",
    "Trigger",
    "assess",
    "done_report",
    "reason",
]


BY = "auto-extraction"
"""The change log's ``by`` of a draft proposed without being asked."""


def enabled(ctx: HookContext) -> bool:
    """Whether the scenario lets drafts be proposed unasked in this room (``Settings``'
    switch is checked once, at registration: a DM's scenario has default settings)."""
    return ctx.scenario_settings.sop_auto_extract and ctx.sop_ref is None


def _span(ctx: HookContext) -> list[Event]:
    """The events since the session's start or its last extraction, whichever is newer."""
    marks = (EventKind.SESSION_END, EventKind.EXTRACTION)
    span = ctx.log.tail_until(lambda e: e.kind in marks)
    return span[1:] if span and span[0].kind in marks else span


def practice_target(ctx: HookContext) -> tuple[str, str]:
    """The SOP id and scope of a ``-practice`` draft of this session: the employee's in a
    DM, the scenario's in a room (unless the room runs an SOP, whose next version it is)."""
    if ctx.key.channel == Channel.DM:
        employee = ctx.participants[0]
        return f"{employee}-practice", f"employee:{employee}"
    scenario = ctx.scenario.id
    return f"{scenario}-practice", f"scenario:{scenario}"


async def propose(
    ctx: HookContext,
    sops: SopService,
    done_id: str,
    trigger: Trigger,
    *,
    employee: str = "",
    said: str = "",
) -> SopVersion | None:
    """Store a draft of the span when it is worth keeping, and tell the person (``done_id``
    is the ``extraction`` event's id: deterministic, so a re-run hook proposes nothing twice).

    Returns the draft, or None when nothing was proposed.
    """
    if ctx.log.has(done_id):
        return None
    span = _span(ctx)
    assessment = assess(span, ctx.participants)
    if not assessment.worth_keeping:
        return None
    why = reason(trigger, assessment, employee=employee, said=said)
    sop_id, scope = practice_target(ctx)
    store = sops.store
    session = str(ctx.key)
    draft = extract_draft(
        span,
        sop_id=sop_id,
        version=await store.next_version(sop_id),
        scope=scope,
        session=session,
        why=why,
        by=BY,
    )
    if draft is None or len(draft.steps) < MIN_STEPS:
        return None
    stored = await _stored_before(store, draft) or await store.add_version(draft)
    content: dict[str, Any] = {
        "extracted": stored.ref,
        "status": str(stored.status),
        "trigger": str(trigger),
        "why": why,
        "steps": [f"{'/'.join(s.speakers)}: {s.do}" for s in stored.steps],
        "review": f"staffroom sop show {stored.ref}; staffroom sop approve {stored.ref} --by NAME",
    }
    meta = {"sop": stored.ref, "trigger": str(trigger)}
    ctx.events.emit(EventKind.EXTRACTION, "system", content, id=done_id, meta=meta)
    return stored


async def _stored_before(store: SopStore, draft: SopVersion) -> SopVersion | None:
    """The same draft stored by a run that crashed before its event was logged, if any.

    The draft is stored before the event is logged (an event must never name a missing
    draft), so a re-run finds it here instead of adding a copy as the next version: a draft
    of this session by these rules with the same goal and steps (whatever triggered it).
    """
    made = draft.change_log[0]
    for version in await store.versions(draft.sop_id):
        first = version.change_log[0] if version.change_log else None
        if (
            version.status == Status.DRAFT
            and first is not None
            and (first.by, first.source) == (made.by, made.source)
            and (version.goal, version.steps) == (draft.goal, draft.steps)
        ):
            return version
    return None
