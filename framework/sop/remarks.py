"""Free remarks about a run ("配图应该在写正文之前") read as corrections, shown back, confirmed.

The pure part of "feedback in people's words" (the hook that asks the model is
``sop/run_remarks.py``):

- :func:`is_candidate`: which of a person's messages are worth a model call (the rule is in
  :mod:`framework.sop.remark_words`);
- :class:`RemarkAnswer`: the JSON a model answers ``read_remark.j2`` with, and
  :func:`answer_problem`, what makes an answer unusable against the run's steps;
- :func:`to_corrections` and :func:`understood_text`: the answer as
  :class:`~framework.sop.model.Correction` s and in people's words ("反馈 1，理解为：第 3 步移到
  第 2 步之前"), which the room shows back while the run goes on;
- how its person confirms or denies it later is :mod:`framework.sop.remark_answers`; only a
  ``confirmed`` remark event counts (:func:`confirmed_corrections`, read by
  :func:`framework.sop.outcomes.run_corrections`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from framework.language import snippet
from framework.phrases import Phrase
from framework.sessions.events import Event
from framework.sessions.payloads import RemarkPayload, payload_of
from framework.sop.corrections import parse_correction
from framework.sop.model import Correction, CorrectionKind, Step
from framework.sop.remark_answers import (
    ANSWERED,
    CONFIRMED,
    DROPPED,
    NOT_A_CORRECTION,
    REMARK_NAME,
    UNCONFIRMED,
    UNDERSTOOD,
    is_confirmation,
    named_remarks,
    verdict,
)
from framework.sop.remark_words import may_correct

__all__ = [
    "ANSWERED",
    "CONFIRMED",
    "DROPPED",
    "EXAMPLE",
    "NOT_A_CORRECTION",
    "REMARK_CHARS",
    "REMARK_NAME",
    "UNCONFIRMED",
    "UNDERSTOOD",
    "RemarkAnswer",
    "RemarkItem",
    "answer_problem",
    "confirm_ask",
    "confirmed_corrections",
    "correction_dict",
    "correction_of",
    "describe",
    "grammar_hint",
    "is_candidate",
    "is_confirmation",
    "lenient_answer",
    "read_content",
    "to_corrections",
    "understood_text",
]

REMARK_CHARS = 600
"""How much of a remark a model is shown (a remark is a sentence or two, not a brief)."""

_NONE_WORDS = frozenset({"none", "null", "no", "无", "没有", "不是", "不是纠正"})

UNDERSTOOD_AS = Phrase(
    en="{name}, understood as: {told}",
    zh="{name}，理解为：{told}",
)
ASK = Phrase(
    en="the run goes on; to count it, reply to this or say “yes, {name}”; “no, {name}” drops "
    "it (until the feedback window closes)",
    zh="运行继续，不等待；要计入，请回复这条或说“对，{name}”；说“不对，{name}”则不计入"
    "（反馈窗口关闭前都可以）",
)
NOT_READ_AS_CORRECTION = Phrase(
    en="not read as a correction of the SOP's steps",
    zh="没有读出对 SOP 步骤的纠正",
)
GRAMMAR_HINT = Phrase(
    en="to count it, write it in the correction form: correction: order 3 before 2 / "
    'correction: missing reviewer "check" before 4 / correction: extra 3 / correction: edit 2 '
    '"outline only"',
    zh='按格式写才会计入：纠正: order 3 before 2 / 纠正: missing reviewer "合规自检" before 4 / '
    '纠正: extra 3 / 纠正: edit 2 "只写提纲"',
)
"""How to write a correction that counts as it is (shown to people, never in a prompt)."""


def is_candidate(text: str, steps: Sequence[Step]) -> bool:
    """Whether a person's ``text`` may correct the run's ``steps`` in free words.

    Cheap on purpose (only candidates cost a model call): not an SOP correction in the
    structured form (:func:`~framework.sop.corrections.parse_correction` reads one: it counts as
    it is), not a yes or no to a named remark ("yes, remark 2"), not a bare confirmation,
    and :func:`~framework.sop.remark_words.may_correct`: a correction cue and a reference to
    the steps, read as words (never substrings).
    """
    if not steps or not text.strip() or is_confirmation(text):
        return False
    if named_remarks(text) and verdict(text) is not None:
        return False
    if any(parse_correction(line) for line in text.splitlines()):
        return False
    return may_correct(text, steps)


class RemarkItem(BaseModel):
    """One correction read in a remark; step numbers as the prompt lists them (1-based)."""

    kind: Literal["order", "missing", "extra", "edit"] = Field(
        description="order: a step should come before another; missing: a step should be "
        "added; extra: a step should be removed; edit: a step should do something else"
    )
    step: int | None = Field(default=None, description="order/extra/edit: the step's number")
    before: int | None = Field(
        default=None,
        description="order/missing: the number of the step it should come before "
        "(missing: null for the end)",
    )
    speaker: str | None = Field(
        default=None, description="missing: the employee id who does the new step"
    )
    do: str | None = Field(
        default=None, description="missing: what the new step does; edit: the step's new text"
    )


class RemarkAnswer(BaseModel):
    """The JSON a model answers ``read_remark.j2`` with."""

    corrections: list[RemarkItem] = Field(
        description="the corrections the remark asks for; empty when it asks for none"
    )


EXAMPLE = RemarkAnswer(corrections=[])
"""The one example the prompt shows: the empty answer. A weak model copies examples; copying
this one reads "no correction", never a change nobody asked for."""


def lenient_answer(text: str) -> RemarkAnswer | None:
    """A bare "none" (无, 没有, null) as the answer "no correction"; anything else: None."""
    word = text.strip().strip("\"'`.。").casefold()
    return RemarkAnswer(corrections=[]) if word in _NONE_WORDS else None


def answer_problem(
    answer: RemarkAnswer, steps: Sequence[Step], employees: Iterable[str]
) -> str | None:
    """What makes ``answer`` unusable against ``steps`` (None: usable), said for the model."""
    last, known = len(steps), set(employees) | {s for step in steps for s in step.speakers}
    for n, item in enumerate(answer.corrections, start=1):
        where = f"correction {n} ({item.kind})"
        needs = {"order": ("step", "before"), "extra": ("step",), "edit": ("step", "do")}
        for name in needs.get(item.kind, ("speaker", "do")):
            if not getattr(item, name):
                return f"{where} needs '{name}'"
        for name in ("step", "before"):
            value = getattr(item, name)
            top = last + 1 if name == "before" and item.kind == "missing" else last
            if value is not None and not 1 <= value <= top:
                return f"{where}: {name} {value} is not a step number 1..{top}"
        if item.kind == "order" and (item.step or 0) <= (item.before or 0):
            return f"{where}: step {item.step} already comes before step {item.before}"
        if item.kind == "missing" and item.speaker not in known:
            return f"{where}: speaker '{item.speaker}' is not one of: {', '.join(sorted(known))}"
    return None


def to_corrections(answer: RemarkAnswer, remark: str, by: str) -> tuple[Correction, ...]:
    """The answer's corrections, each with the remark as its detail and the person as ``by``."""
    detail = snippet(remark, 120)
    return tuple(
        Correction(
            kind=item.kind,
            detail=detail,
            step=item.step if item.kind != "missing" else None,
            by=by,
            speaker=item.speaker if item.kind == "missing" else None,
            do=item.do.strip() if item.do and item.kind in ("missing", "edit") else None,
            before=item.before if item.kind in ("order", "missing") else None,
        )
        for item in answer.corrections
    )


def correction_dict(c: Correction) -> dict[str, Any]:
    """``c`` as JSON for an event's content."""
    return {
        "kind": c.kind,
        "step": c.step,
        "before": c.before,
        "speaker": c.speaker,
        "do": c.do,
        "detail": c.detail,
        "by": c.by,
    }


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def correction_of(data: object) -> Correction | None:
    """The correction an event's content holds (None for a shape that is not one)."""
    if not isinstance(data, Mapping) or data.get("kind") not in get_args(CorrectionKind):
        return None
    kind: CorrectionKind = data["kind"]
    return Correction(
        kind=kind,
        detail=str(data.get("detail") or ""),
        step=_int(data.get("step")),
        by=str(data.get("by") or ""),
        speaker=_text(data.get("speaker")),
        do=_text(data.get("do")),
        before=_int(data.get("before")),
    )


def confirmed_corrections(event: Event) -> list[Correction]:
    """The corrections a ``confirmed`` remark event counts (none for any other event)."""
    said = payload_of(event)
    if not isinstance(said, RemarkPayload) or said.status != CONFIRMED:
        return []
    found = (correction_of(d) for d in said.corrections or [])
    return [c for c in found if c is not None]


def _short(do: str) -> str:
    return snippet(re.split(r"[：:，,。；;（(]", do, maxsplit=1)[0], 16)


def _step_name(n: int | None, steps: Sequence[Step], english: bool) -> str:
    if not n or not 1 <= n <= len(steps):
        return f"step {n}" if english else f"第 {n} 步"
    short = _short(steps[n - 1].do)
    return f"step {n} ({short})" if english else f"第 {n} 步（{short}）"


def describe(c: Correction, steps: Sequence[Step], english: bool) -> str:
    """One correction in people's words ("第 3 步（配图方案）移到第 2 步之前")."""
    step = _step_name(c.step, steps, english)
    where_zh = f"在第 {c.before} 步之前" if c.before else "在最后"
    where_en = f"before step {c.before}" if c.before else "at the end"
    if c.kind == "order":
        return (
            f"move {step} before step {c.before}" if english else f"{step}移到第 {c.before} 步之前"
        )
    if c.kind == "missing":
        if english:
            return f"add a step {where_en}: {c.speaker} does “{c.do}”"
        return f"{where_zh}加一步：{c.speaker} 做“{c.do}”"
    if c.kind == "extra":
        return f"remove {step}" if english else f"去掉{step}"
    return f"{step} should do “{c.do}”" if english else f"{step}改为“{c.do}”"


def understood_text(
    corrections: Sequence[Correction], steps: Sequence[Step], english: bool, number: int = 1
) -> str:
    """What the room shows back: "remark 1, understood as: …" / "反馈 1，理解为：…"."""
    language = "en" if english else "zh"
    told = ("; " if english else "；").join(describe(c, steps, english) for c in corrections)
    return UNDERSTOOD_AS(language, name=REMARK_NAME(language, n=number), told=told)


def confirm_ask(english: bool, number: int = 1) -> str:
    """How to confirm or deny what was understood, later: the run does not wait."""
    language = "en" if english else "zh"
    return ASK(language, name=REMARK_NAME(language, n=number))


def read_content(
    corrections: Sequence[Correction], steps: Sequence[Step], *, english: bool, number: int
) -> dict[str, Any]:
    """The content of the ``remark`` event that shows what a model read in a remark: named
    ``number`` in its run, the corrections, and how to confirm them later; or that it read
    none."""
    content: dict[str, Any] = {
        "status": UNDERSTOOD if corrections else NOT_A_CORRECTION,
        "english": english,
        "corrections": [correction_dict(c) for c in corrections],
    }
    if not corrections:
        content["text"] = NOT_READ_AS_CORRECTION("en" if english else "zh")
        return content
    told = ("; " if english else "；").join(describe(c, steps, english) for c in corrections)
    content.update(number=number, told=told)
    content["text"] = understood_text(corrections, steps, english, number)
    content["ask"] = confirm_ask(english, number)
    return content


def grammar_hint(english: bool) -> str:
    """How to say a correction in the structured form (for a remark that was not read)."""
    return GRAMMAR_HINT("en" if english else "zh")
