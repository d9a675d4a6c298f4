"""Quiet fires: a scheduled check that says nothing when there is nothing to act on.

A schedule with ``quiet: true`` posts its message with ``meta.schedule.quiet`` and asks the
employee, in the message itself, to answer with the marker (:data:`NOTHING_TO_REPORT`) when
nothing needs anyone's action. A reply that is the marker is an explicit result, not an
empty reply: the turn flags it (``meta.nothing_to_report``), the fire is recorded ``quiet``
and nothing is delivered (chat platforms are not sent it). Any other reply is delivered.
"""

from __future__ import annotations

import re
from typing import Any

from framework.phrases import Language, Phrase

__all__ = [
    "NOTHING_TO_REPORT",
    "QUIET_ASK",
    "is_nothing_to_report",
    "quiet_ask",
    "quiet_items",
]

NOTHING_TO_REPORT = Phrase(en="NOTHING TO REPORT", zh="无事可报")
"""The whole reply of an employee with nothing actionable on a quiet fire."""

QUIET_ASK = Phrase(
    en="(Scheduled check. If nothing here needs anyone to act, reply with exactly: {marker})",
    zh="（定时检查。如果没有任何需要有人处理的事，只回复：{marker}）",
)
"""Appended to a quiet fire's message, in the language of the room."""

_EDGES = re.compile(r"^[\s\[\(（【「\"'*_`]+|[\s\]\)）】」\"'*_`.!。！]+$")


def is_nothing_to_report(text: str) -> bool:
    """Whether ``text`` is the marker (either language, any case, in brackets or quotes,
    with a final full stop): the whole reply, not a reply that mentions it."""
    core = _EDGES.sub("", text.strip()).casefold()
    return core in {NOTHING_TO_REPORT(lang).casefold() for lang in _LANGUAGES}


def quiet_ask(language: Language) -> str:
    """The instruction a quiet fire's message ends with."""
    return QUIET_ASK(language, marker=NOTHING_TO_REPORT(language))


def quiet_items(meta: dict[str, Any]) -> int | None:
    """How many items a quiet fire's message lists to check (None: not a quiet fire)."""
    schedule = meta.get("schedule")
    if not isinstance(schedule, dict) or not schedule.get("quiet"):
        return None
    items = schedule.get("items", 0)
    return items if isinstance(items, int) else 0


_LANGUAGES: tuple[Language, ...] = ("en", "zh")
