"""When two MEMORY.md entries are the same fact, and when a colon makes an attribute.

Text similarity alone merges distinct facts that share a sentence shape ("On day 19, Sam noted
that the incident postmortem ..." and "On day 103, Sam noted that the compliance audit ..."
score 0.8-0.9). So a near-duplicate replaces an entry only when both name the same
*anchors*: the numbers, dates, ids and names in them. Entries that differ in any anchor are
different facts and are both kept.

A ``key: value`` entry is an attribute (a correction of it replaces the old value) only when
the key names one: short (``_MAX_KEY_WORDS``) and not a discourse label such as ``Update:``,
``Note:`` or ``补充：``, which head unrelated sentences.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata

from framework.memory.similarity import tokens

__all__ = ["anchors", "attribute_key", "same_attribute", "same_fact"]

_MAX_KEY_WORDS = 6
"""An attribute name is a few words (``偏好语言``, ``Alice's phone``); a longer head is prose.
A Chinese character counts as half a word (``刘洋的负责模块`` is 3.5), as words run two
characters on average."""
_LABELS = frozenset(
    """update updates note notes fyi reminder todo important info news edit summary ps
    question answer warning tip idea remark comment heads up breaking correction status
    更新 注意 备注 提醒 补充 说明 总结 提示 重要 通知 问题 回答 想法 注 附""".split()  # noqa: SIM905 (a word list reads better so)
)
_ANCHOR = re.compile(r"[A-Za-z]+\d[\w./-]*|\d[\w./:-]*|[A-Z][\w'-]*|[A-Za-z]+[-_]\w+")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
_STARTERS = frozenset(
    """a an the on in at by for from to of with this that these those we i it he she they
    you our my your their its today yesterday tomorrow when after before if and but so
    then also please note every each all some no not""".split()  # noqa: SIM905 (a word list reads better so)
)
"""Capitalised only because they start a sentence: not names."""


def attribute_key(entry: str) -> str | None:
    """The normalised attribute of a ``key: value`` entry, else ``None`` (no colon, a time or
    URL colon, a head too long to be a name, or a discourse label)."""
    head, sep, tail = unicodedata.normalize("NFKC", entry).partition(":")
    if not sep:
        head, sep, tail = entry.partition("：")
    if not sep or not tail.strip() or tail.startswith("//"):
        return None
    if head[-1:].isdigit() and tail[:1].isdigit():
        return None  # 15:00
    words = tokens(head)
    size = sum(0.5 if _HAN.fullmatch(word) else 1.0 for word in words)
    if not 0 < size <= _MAX_KEY_WORDS:
        return None
    key = " ".join(words)
    if key in _LABELS or "".join(words) in _LABELS:
        return None
    return key


def same_attribute(a: str, b: str) -> bool:
    """Both entries give a value of the same attribute (a correction replaces the old one)."""
    key = attribute_key(a)
    return key is not None and key == attribute_key(b)


@functools.lru_cache(maxsize=4096)
def anchors(entry: str) -> frozenset[str]:
    """The specifics of an entry: numbers and dates, ids (``INC-204``, ``v2.3``), names
    (capitalised words that do not merely start a sentence) and, in Chinese, the person
    names and time words jieba's tagger finds (``张伟``, ``周五``), casefolded."""
    text = unicodedata.normalize("NFKC", entry)
    found = {m.group(0).rstrip(".:/-").casefold() for m in _ANCHOR.finditer(text)}
    if _HAN.search(text):
        found |= _chinese_anchors(text)
    return frozenset(found - _STARTERS)


def _chinese_anchors(text: str) -> set[str]:
    import jieba  # imported on first Chinese entry: loading its dictionary takes a second
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return {w.word for w in jieba.posseg.cut(text) if w.flag.startswith(("nr", "t"))}


def same_fact(a: str, b: str) -> bool:
    """Whether a near-duplicate ``b`` may replace ``a``: they name the same anchors. A word
    that is an anchor in one only by its capital (``Prefers`` starting a sentence) and is
    in the other too is no difference."""
    words_a, words_b = set(tokens(a)), set(tokens(b))
    differ = [
        anchor
        for anchor in anchors(a) ^ anchors(b)
        if not set(tokens(anchor)) <= (words_a & words_b)
    ]
    return not differ
