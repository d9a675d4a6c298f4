"""Text similarity for MEMORY.md entries, so a near-duplicate replaces an entry instead of stacking.

The default compares normalised token sequences: NFKC (full-width forms become ASCII),
casefold, and every character that is not a letter or digit (ASCII and Chinese punctuation,
symbols, whitespace) separates tokens. Each CJK character is a token of its own and each run of
other letters or digits is one token, so Chinese, English and mixed entries compare alike
without a segmenter. Pass any :class:`Similarity` to ``MemoryFile`` to use something else.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher
from typing import Protocol

__all__ = ["Similarity", "entry_key", "normalize", "normalized_similarity", "same_key", "tokens"]

# Han (with extension A, compatibility and the supplementary planes), kana and Hangul.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af\U00020000-\U0002fa1f"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W_{_CJK}]+")
# A "key: value" label is short; a longer head before a colon is a sentence, not a key.
_MAX_KEY_TOKENS = 12


class Similarity(Protocol):
    """A symmetric score in [0, 1]: 1 for entries that say the same, 0 for unrelated ones."""

    def __call__(self, a: str, b: str, /) -> float: ...


def tokens(text: str) -> list[str]:
    """The normalised tokens of ``text``: one per CJK character, one per Latin word or number."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


def normalize(text: str) -> str:
    """A comparison key for ``text``: its tokens joined by single spaces."""
    return " ".join(tokens(text))


def normalized_similarity(a: str, b: str) -> float:
    """``difflib`` ratio of the two token sequences (1.0 when both normalise to the same)."""
    ta, tb = tokens(a), tokens(b)
    if ta == tb:
        return 1.0
    return SequenceMatcher(None, ta, tb, autojunk=False).ratio()


def entry_key(entry: str) -> str | None:
    """The normalised key of a ``key: value`` (or ``key：value``) entry, else ``None``.

    A colon between digits (``15:00``) or before ``//`` (a URL) does not make a key.
    """
    head, sep, tail = unicodedata.normalize("NFKC", entry).partition(":")
    if not sep or tail.startswith("//") or (head[-1:].isdigit() and tail[:1].isdigit()):
        return None
    key = tokens(head)
    return " ".join(key) if 0 < len(key) <= _MAX_KEY_TOKENS else None


def same_key(a: str, b: str) -> bool:
    """Whether both entries are ``key: value`` lines with the same normalised key."""
    key = entry_key(a)
    return key is not None and key == entry_key(b)
