"""How people's text is read: which language it is in, and short one-line snippets of it.

Shared by prompts, the simulator, consolidation, extraction and the transcript.
"""

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


def snippet(text: str, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut to ``limit`` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
