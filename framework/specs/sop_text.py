"""An SOP as text: the numbered step list rooms post in their announcement.

Shared by SOP cards (:mod:`framework.specs.sop_card`) and stored versions
(:mod:`framework.sop.model`), which both satisfy :class:`StepLike`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class StepLike(Protocol):
    """What :func:`render_steps` reads of a step (a card's or a stored version's)."""

    @property
    def speakers(self) -> Sequence[str]: ...
    @property
    def do(self) -> str: ...
    @property
    def tools(self) -> Sequence[str]: ...
    @property
    def produces(self) -> Sequence[str]: ...
    @property
    def fallback(self) -> str | None: ...
    @property
    def waits_for_input(self) -> bool: ...
    @property
    def parallel(self) -> bool: ...


def render_steps(ref: str, goal: str, steps: Sequence[StepLike], language: str = "zh") -> str:
    """An SOP as a numbered list for a room announcement (``1. pm：立题与提纲``).

    A step that declares products ends with ``→ outline.md``: the announcement is where the
    employee learns which files the step must leave in the workspace.
    """
    zh = language.startswith("zh")
    colon, sep, semi = ("：", "、", "；") if zh else (": ", ", ", "; ")
    words = (
        ("工具", "等待人工确认", "并行", "兜底")
        if zh
        else ("tools", "waits for human input", "in parallel", "fallback")
    )
    out = [f"SOP {ref}{colon}{goal}"]
    for n, step in enumerate(steps, start=1):
        who = sep.join(step.speakers)
        if step.parallel:
            who += f"（{words[2]}）" if zh else f" ({words[2]})"
        notes = []
        if step.tools:
            notes.append(f"{words[0]}{colon}{', '.join(step.tools)}")
        if step.waits_for_input:
            notes.append(words[1])
        if step.fallback:
            notes.append(f"{words[3]}{colon}{step.fallback}")
        tail = ""
        if notes:
            tail = f"（{semi.join(notes)}）" if zh else f" ({semi.join(notes)})"
        if step.produces:
            tail += f" → {', '.join(step.produces)}"
        out.append(f"{n}. {who}{colon}{step.do}{tail}")
    return "\n".join(out)


__all__ = ["StepLike", "render_steps"]
