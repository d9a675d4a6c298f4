"""The corrections people type in chat: one line in a small grammar, read into a Correction.

``纠正: order engineer before 1`` and the like (see :func:`parse_correction`). Rooms, late
remarks and the outcome reader all recognise a correction through this one reader; what the
corrections of many runs then ask of an SOP is :mod:`framework.sop.revision_plan`'s to weigh.
"""

from __future__ import annotations

import re

from framework.sop.model import Correction

__all__ = ["parse_correction"]

_QUOTED = r"[\"“「『](?P<do>[^\"”」』]+)[\"”」』]"
_TAIL = r"(?:[\s:：—#-]+(?P<rest>.*))?$"
_PREFIX = re.compile(r"^\s*(?:纠正|更正|correction)\s*[:：]\s*(?P<body>.+?)\s*$", re.IGNORECASE)
_NAME = r"[^\s\"“「『]+"
_BEFORE = r"\s+before\s+(?P<before>\d+)"
_FORMS = {
    kind: re.compile(pattern + _TAIL, re.IGNORECASE)
    for kind, pattern in {
        "order": rf"order\s+(?:{_QUOTED}|(?P<subject>{_NAME})){_BEFORE}",
        "missing": rf"missing\s+(?P<speaker>{_NAME})\s+{_QUOTED}(?:{_BEFORE})?",
        "extra": rf"extra\s+(?:(?P<step>\d+)\b|{_QUOTED})",
        "edit": rf"edit\s+(?P<step>\d+)\s+{_QUOTED}",
    }.items()
}


def parse_correction(text: str) -> Correction | None:
    """Read the structured correction a (simulated) user types in chat, or None.

    Grammar (one line; the first line with the prefix counts; keywords case-insensitive)::

        line    := prefix ("order" | "missing" | "extra" | "edit") ... [sep reason]
        prefix  := ("纠正" | "更正" | "correction") (":" | "：")
        order   := "order" (STEP | SPEAKER | QUOTED) "before" STEP
                                    that step goes right before STEP (past the last: to the end)
        missing := "missing" SPEAKER QUOTED ["before" STEP]   add a step (default: at the end)
        extra   := "extra" (STEP | QUOTED)                   remove that step
        edit    := "edit" STEP QUOTED                        step STEP should do QUOTED
        QUOTED  := text in "..." or “...” or 「...」 or 『...』;  STEP := 1-based number

    A step is named by its number in the run, or by its whole text (never a part of it).

    A free-text reason may follow after whitespace, ``:``, ``—``, ``-`` or ``#``; it becomes
    the correction's ``detail`` (else the structured text does). Examples:
    ``纠正: order engineer before 1 先出提纲再评估``, ``correction: missing reviewer "合规自检"
    before 4``, ``correction: extra 3``, ``correction: edit 2 "只写提纲"``. Ordinary text,
    or a prefixed line that does not fit the grammar, gives None.
    """
    for line in text.splitlines():
        head = _PREFIX.match(line)
        if head is not None:
            return _parse_body(head.group("body"))
    return None


def _parse_body(body: str) -> Correction | None:
    for kind, form in _FORMS.items():
        m = form.match(body)
        if m is None:
            continue
        g = m.groupdict()
        detail = (g.get("rest") or "").strip() or body
        before = int(g["before"]) if g.get("before") else None
        step = int(g["step"]) if g.get("step") else None
        if 0 in (before, step):
            return None  # step numbers start at 1
        if kind == "order":
            subject = g["subject"]
            if subject is None:  # a step named by its whole text
                return Correction("order", detail, do=g["do"], before=before)
            if not subject.isdigit():
                return Correction("order", detail, speaker=subject, before=before)
            return (
                Correction("order", detail, step=int(subject), before=before)
                if int(subject)
                else None
            )
        if kind == "missing":
            return Correction("missing", detail, speaker=g["speaker"], do=g["do"], before=before)
        if kind == "extra":
            return Correction("extra", detail, step=step, do=g.get("do"))
        return Correction("edit", detail, step=step, do=g["do"])
    return None
