"""Which language people write in: the one rule shared by prompts, the simulator and SOP text."""

from __future__ import annotations

import re

_LATIN = re.compile(r"[A-Za-z]")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def is_english(text: str) -> bool:
    """True when ``text`` has Latin letters and no CJK characters."""
    return bool(_LATIN.search(text)) and not _CJK.search(text)


def language_of(text: str, default: str = "zh") -> str:
    """``"en"`` for English text, else ``default``."""
    return "en" if is_english(text) else default
