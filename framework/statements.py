"""Durable facts people state about themselves, recognised by fixed rules.

Used where no model is involved or wanted: the offline simulator (to call the ``memory``
tool for simple preference statements), the extractive consolidation path, and a turn whose
real model did not call the memory tool on such a statement (recorded as a fallback). The
rules are deliberately few and literal; a real model handles everything else. Pure text
rules at the base level, so the simulator (models/) and memory/ both read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fact:
    """One MEMORY.md entry in a named section."""

    section: str
    """``identity``, ``project``, ``preferences`` or ``facts``."""
    entry: str
    """``key: value`` so a later statement of the same key replaces it."""


LANGUAGE_KEY = "偏好语言"
NAME_KEY = "姓名"

_EN = r"(?:英文|英语|english)"
_ZH = r"(?:中文|汉语|普通话|chinese)"
_RULES: list[tuple[re.Pattern[str], str, str, str | None]] = [
    # (pattern, section, key, fixed value or None to take group 1)
    (
        re.compile(rf"(?:用|说|讲|写){_EN}|{_EN}(?:回复|回答|交流)", re.I),
        "preferences",
        LANGUAGE_KEY,
        "English",
    ),
    (
        re.compile(rf"(?:用|说|讲|写){_ZH}|{_ZH}(?:回复|回答|交流)", re.I),
        "preferences",
        LANGUAGE_KEY,
        "中文",
    ),
    (
        re.compile(r"\b(?:reply|answer|respond|talk|speak|write)\b[^.?!]*\bin english\b", re.I),
        "preferences",
        LANGUAGE_KEY,
        "English",
    ),
    (
        re.compile(r"\b(?:reply|answer|respond|talk|speak|write)\b[^.?!]*\bin chinese\b", re.I),
        "preferences",
        LANGUAGE_KEY,
        "中文",
    ),
    (re.compile(r"我(?:叫|的名字是)\s*([\w\u4e00-\u9fff]{1,20})"), "identity", NAME_KEY, None),
    (
        re.compile(r"\b(?:call me|my name is)\s+([A-Za-z][\w-]{0,30})", re.I),
        "identity",
        NAME_KEY,
        None,
    ),
]


def stated_facts(text: str) -> list[Fact]:
    """Facts the speaker states about themselves in ``text`` (at most one per key)."""
    found: dict[str, Fact] = {}
    for pattern, section, key, value in _RULES:
        match = pattern.search(text)
        if match and key not in found:
            found[key] = Fact(section, f"{key}: {value or match.group(1)}")
    return list(found.values())


def preferred_language(entries: list[str]) -> str | None:
    """``"en"`` or ``"zh"`` from a preferences section's language entry, if it has one."""
    for entry in entries:
        key, _, value = entry.replace("：", ":").partition(":")
        if key.strip() == LANGUAGE_KEY:
            return "en" if value.strip().lower() in ("english", "英文", "英语") else "zh"
    return None
