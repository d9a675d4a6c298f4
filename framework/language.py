"""How people's text is read: which language it is in, and short one-line snippets of it.

Shared by prompts, the simulator, consolidation, extraction and the transcript. Also which
language the framework writes a room's shared text in (:func:`room_language`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from framework.phrases import Language

_LATIN = re.compile(r"[A-Za-z]")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def is_english(text: str) -> bool:
    """True when ``text`` has Latin letters and no CJK characters."""
    return bool(_LATIN.search(text)) and not _CJK.search(text)


def language_of(text: str, default: str = "zh") -> str:
    """``"en"`` for English text, else ``default``."""
    return "en" if is_english(text) else default


def main_language(text: str, default: Language = "zh") -> Language:
    """The language most of ``text`` is written in: ``"en"`` when its English words outnumber
    its Chinese ones (two Han characters make about one word), ``"zh"`` when they do not;
    ``default`` when it has neither. A Chinese name in an English session leaves it English."""
    latin = len(_LATIN_WORD.findall(text))
    han = len(_CJK.findall(text)) / 2
    if not latin and not han:
        return default
    return "en" if latin > han else "zh"


def room_language(
    stated: Language | None, cards: Iterable[Language], announcement: str
) -> Language:
    """The language a room's shared text is written in (SOP list, notices, prompts' frame).

    The scenario's ``language`` when it states one; else the cards' when they all agree (each
    card's stated or inferred language, see ``EmployeeCard.writes_in``); else the language of
    the announcement (Chinese unless it is English only, as before languages were stated).
    """
    if stated is not None:
        return stated
    agreed = set(cards)
    if len(agreed) == 1:
        return agreed.pop()
    return "en" if is_english(announcement) else "zh"


def snippet(text: str, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
