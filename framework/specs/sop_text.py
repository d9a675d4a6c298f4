"""An SOP as text: the numbered step list rooms post in their announcement.

Reads :class:`~framework.specs.step.Step`: SOP cards (:mod:`framework.specs.sop_card`) render
theirs converted, stored versions (:mod:`framework.sop.model`) as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

from framework.language import main_language
from framework.phrases import Language, Phrase, language_or_default

from .step import Step

TOOLS = Phrase(
    en="tools: {tools}",
    zh="工具：{tools}",
)
WAITS = Phrase(
    en="waits for human input",
    zh="等待人工确认",
)
PARALLEL = Phrase(
    en=" (in parallel)",
    zh="（并行）",
)
FALLBACK = Phrase(
    en="fallback: {fallback}",
    zh="兜底：{fallback}",
)
NOTES = Phrase(
    en=" ({notes})",
    zh="（{notes}）",
)
STEP = Phrase(
    en="{n}. {who}: {do}{tail}",
    zh="{n}. {who}：{do}{tail}",
)
TITLE = Phrase(
    en="SOP {ref}: {goal}",
    zh="SOP {ref}：{goal}",
)


def sop_language(goal: str, steps: Sequence[Step]) -> Language:
    """The language an SOP is written in (its goal and steps), for labels that match it."""
    return main_language(" ".join([goal, *(step.do for step in steps)]), default="zh")


def render_steps(ref: str, goal: str, steps: Sequence[Step], language: str | None = None) -> str:
    """An SOP as a numbered list for a room announcement (``1. pm: outline the talk``).

    ``language``: of the labels (``tools``, ``waits for human input``); a room passes its
    own, and without one the labels follow the language the SOP is written in, so a listing
    is never half in one language and half in the other.

    A step that declares products ends with ``→ outline.md``: the announcement is where the
    employee learns which files the step must leave in the workspace.
    """
    lang = language_or_default(language, default=sop_language(goal, steps))
    sep, semi = ("、", "；") if lang == "zh" else (", ", "; ")
    out = [TITLE(lang, ref=ref, goal=goal)]
    for n, step in enumerate(steps, start=1):
        who = sep.join(step.speakers)
        if step.parallel:
            who += PARALLEL(lang)
        notes = []
        if step.tools:
            notes.append(TOOLS(lang, tools=", ".join(step.tools)))
        if step.waits_for_input:
            notes.append(WAITS(lang))
        if step.fallback:
            notes.append(FALLBACK(lang, fallback=step.fallback))
        tail = NOTES(lang, notes=semi.join(notes)) if notes else ""
        if step.produces:
            tail += f" → {', '.join(step.produces)}"
        out.append(STEP(lang, n=n, who=who, do=step.do, tail=tail))
    return "\n".join(out)


__all__ = ["render_steps", "sop_language"]
