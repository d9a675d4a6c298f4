"""Framework text in both languages: every notice, label and hint the framework writes.

A :class:`Phrase` holds one text in English and in Chinese and lives beside the code that
says it (a feature's notices in the feature's module), so a new text cannot be written in one
language only. ``tests/test_phrases.py`` finds every phrase and checks both sides (no Han
characters in the English one, the same ``{placeholders}`` in both).

Which language a text is written in is the caller's to decide (:func:`language_or_default`
turns what a card, scenario, project or person says into ``"en"`` or ``"zh"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")


def language_or_default(value: str | None, default: Language = "en") -> Language:
    """``"zh"`` for any Chinese tag (``zh``, ``zh-CN``, ``zh_Hans``), ``"en"`` for any English
    one, else ``default``: a tag this framework has no text for falls back, never fails."""
    tag = (value or "").strip().lower()
    if tag.startswith("zh"):
        return "zh"
    if tag.startswith("en"):
        return "en"
    return default


def known_language(value: str | None) -> Language | None:
    """``"en"`` or ``"zh"`` for a tag of either (read as :func:`language_or_default` reads
    it), None for any other: for settings that must refuse a language they cannot honour."""
    tag = (value or "").strip().lower()
    return language_or_default(tag) if tag.startswith(("en", "zh")) else None


@dataclass(frozen=True)
class Phrase:
    """One framework text in both languages; ``{name}`` placeholders are filled by
    :meth:`__call__` (``str.format``), the same in both."""

    en: str
    zh: str

    def __call__(self, language: str, /, **values: Any) -> str:
        """The text in ``language`` (anything not Chinese reads English), filled with
        ``values``."""
        text = self.zh if language_or_default(language) == "zh" else self.en
        return text.format(**values) if values else text


__all__ = ["LANGUAGES", "Language", "Phrase", "known_language", "language_or_default"]
