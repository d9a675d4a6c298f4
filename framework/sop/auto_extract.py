"""When a session is worth an SOP draft nobody asked for (seed 000 §5.1, path 1).

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
  :data:`MIN_STEPS` distinct steps (checked by the caller on the draft).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import ToolCallPayload, payload_of

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
            if not event.from_person and event.text.strip():
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
