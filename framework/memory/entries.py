"""A MEMORY.md's parts: its sections and titles (in either language), and what an entry may be.

Titles follow the file's language (``# User identity`` in an English file, ``# 用户身份`` in a
Chinese one); either is read in any file. An entry is stored exactly as given
(:func:`clean_entry`): what the file could not give back unchanged is refused, never
silently rewritten.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Literal

from framework.errors import InputError
from framework.phrases import Phrase

__all__ = [
    "DEFAULT_TITLES",
    "ENGLISH_TITLES",
    "SECTION_IDS",
    "SEPARATOR",
    "MemoryChange",
    "MemoryDoc",
    "clean_entry",
    "section_titles",
]

SECTION_IDS = ("identity", "project", "preferences", "facts")
"""Section ids, in file order."""
TITLE_IDENTITY = Phrase(
    en="User identity",
    zh="用户身份",
)
TITLE_PROJECT = Phrase(
    en="Project context",
    zh="项目上下文",
)
TITLE_PREFERENCES = Phrase(
    en="Preferences",
    zh="个性化偏好",
)
TITLE_FACTS = Phrase(
    en="Key facts",
    zh="关键事实",
)
_TITLES = (TITLE_IDENTITY, TITLE_PROJECT, TITLE_PREFERENCES, TITLE_FACTS)


def section_titles(language: str) -> dict[str, str]:
    """Section id -> title in ``language`` (``en`` or ``zh``)."""
    return {sid: title(language) for sid, title in zip(SECTION_IDS, _TITLES, strict=True)}


DEFAULT_TITLES = section_titles("zh")
"""The Chinese titles (what files were written with before titles followed the language)."""
ENGLISH_TITLES = section_titles("en")
SEPARATOR = "§"
"""A line holding only this separates sections."""

ENTRY_FIX = "give the entry as one short line of text"


@dataclass
class MemoryDoc:
    """A parsed MEMORY.md: entries per section id, and what was odd about the file."""

    sections: dict[str, list[str]] = field(default_factory=lambda: {s: [] for s in SECTION_IDS})
    warnings: list[str] = field(default_factory=list)
    write_refusal: InputError | None = None
    """Why every write to this file is refused (it is not UTF-8: a rewrite would lose what
    did not decode); None when it may be written."""
    language: str | None = field(default=None, compare=False)
    """The language of the file's titles (``en``/``zh``; None: no title read yet)."""


@dataclass(frozen=True, slots=True)
class MemoryChange:
    """What a write actually did (an ``add`` may turn out a replace, or nothing)."""

    action: Literal["added", "replaced", "removed", "unchanged"]
    section: str
    old: str | None
    new: str | None
    similar: tuple[str, ...] = ()
    """Entries like the new one that were kept as other facts (the model may mean one)."""


def clean_entry(entry: str) -> str:
    """``entry`` as it will read back: exactly the line given, without the whitespace around
    it (a line's ends cannot be seen in the file). What the file cannot hold exactly is an
    :class:`InputError` saying why, never a silently changed entry: an empty entry, more
    than one line, a leading ``#`` (read back as a section title), a lone ``§``, or a
    control character."""
    text = entry.strip()
    if not text or text == SEPARATOR:
        raise InputError(
            "a memory entry must be a non-empty line of text", field="content", fix=ENTRY_FIX
        )
    if "\n" in text or "\r" in text:
        raise InputError(
            "a memory entry is one line; this one has line breaks, which MEMORY.md would "
            "read back as separate entries",
            field="content",
            fix="store one fact per entry: one add per line",
        )
    if text.startswith("#"):
        raise InputError(
            "a memory entry cannot start with '#': MEMORY.md would read it back as a section title",
            field="content",
            fix="start the entry with its words, e.g. 'No. 1 priority: …' for '#1 priority: …'",
        )
    if any(unicodedata.category(ch) == "Cc" and ch != "\t" for ch in text):
        raise InputError(
            "a memory entry cannot hold control characters", field="content", fix=ENTRY_FIX
        )
    return text
