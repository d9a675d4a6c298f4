"""When two MEMORY.md entries are the same fact, and when a colon makes an attribute.

Text similarity alone merges distinct facts that share a sentence shape ("On day 19, Sam noted
that the incident postmortem ..." and "On day 103, Sam noted that the compliance audit ..."
score 0.8-0.9). So a near-duplicate replaces an entry only when both name the same
*anchors*: the numbers, dates, ids and names in them. Entries that differ in any anchor are
different facts and are both kept.

A later entry *updates* an earlier one (:func:`updates`) when it says so (``Correction:``,
``Update:``, "moved to", "changed", "pushed back", "改到") and is about the same subject: it
repeats most of the earlier entry's words, names no other id, and names no other person
unless it says the role changed hands ("Sam is now the lead"). Two reports of the same kind
("Sam moved the review to 12 March", "Sam moved it to 5 March") are events, not a
correction: the marker must be new in the later entry.

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
from framework.statements import states

__all__ = ["anchors", "attribute_key", "same_attribute", "same_fact", "superseded_by", "updates"]

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
_CALENDAR = frozenset(
    """january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday today tomorrow""".split()  # noqa: SIM905 (a word list reads better so)
)


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


def _chinese_anchors(text: str, flags: tuple[str, ...] = ("nr", "t")) -> set[str]:
    import jieba  # imported on first Chinese entry: loading its dictionary takes a second
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)
    return {w.word for w in jieba.posseg.cut(text) if w.flag.startswith(flags)}


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


_MARKER = re.compile(
    r"^\s*(?:correction|corrected|update|updated|change|changed)\s*[:：]|"
    r"\b(?:moved|changed|pushed back|postponed|rescheduled|delayed|brought forward|"
    r"escalated|downgraded|switched|no longer|is now|are now|now the|took over|replaced|"
    r"started|stopped)\b|"
    r"更正|更新[:：为]|改为|改成|改到|推迟到|延期到|提前到|换成|现在是|不再|搬到|调整为|升级为|降级为",
    re.IGNORECASE,
)
_HANDOVER = re.compile(
    r"\b(?:changed|is now|are now|now the|took over|replaced|handed over)\b|换成|现在是|改由|接手",
    re.IGNORECASE,
)
_ID = re.compile(r"\b[A-Za-z]+-\d+\b|\b[A-Z]{2,}\d+\b|(?<!\w)#\d+\b")
_SAME_SUBJECT = {"address": "live", "lives": "live", "deadline": "due", "leadership": "lead"}
"""Words that name one subject in an update's usual paraphrase (lived at -> new address)."""
_FILLER = frozenset(
    """a an the is are was were be been to of in on at by for from with and or but so it its
    my our your their his her i we you they he she me us them this that there here has have
    had do does did not no now new please also just very currently again moved changed
    update updated correction pushed back postponed rescheduled delayed escalated
    switched started stopped replaced took over""".split()  # noqa: SIM905 (a word list reads better so)
)


def _subject_words(entry: str) -> set[str]:
    """The entry's words that are not fillers or markers, stemmed to five letters (``reports``
    and ``report`` are one word) and mapped through :data:`_SAME_SUBJECT`."""
    out = set()
    for word in tokens(_MARKER.sub(" ", entry)):
        if word in _FILLER or (word.isascii() and len(word) < 2) or any(c.isdigit() for c in word):
            continue  # numbers are the values an update changes, not its subject
        out.add(_SAME_SUBJECT.get(word, word.rstrip("s") if len(word) > 3 else word)[:5])
    return out


def updates(old: str, new: str) -> bool:
    """Whether ``new`` is an update of ``old`` that should supersede it (see the module
    docstring); False whenever in doubt, so two different facts are never merged."""
    if not _MARKER.search(new) or _MARKER.search(old):
        return False
    ids = _ids(old)
    if ids - _ids(new):
        return False  # another ticket, order or incident
    if _someone_else(old, new):
        return False  # someone else's fact
    # A ticket's or order's id names the subject as well as a word does ("Ticket #4411 is
    # blocked" -> "Ticket #4411 is now resolved"): the ids were checked to agree above.
    words_old, words_new = _subject_words(old) | ids, _subject_words(new) | ids
    shared = words_old & words_new
    # What the old entry says beyond the shared subject is the value the update replaces: a
    # word or two ("pending", "42 Birch Street"), not another statement ("Kofi noted that the
    # audit was approved" is not what "Kofi moved the audit to 11 March" corrects).
    return len(shared) >= 2 and 2 * len(shared) >= len(words_old) and len(words_old - shared) <= 2


def related(old: str, new: str) -> bool:
    """Whether a model may say ``new`` replaces ``old``: they give the same attribute, or
    share a subject word with no other ticket or person in ``new`` than in ``old``. A weak
    model copying ``replaces: 1`` onto any fact must not delete an unrelated entry."""
    if same_attribute(old, new):
        return True
    if _ids(old) ^ _ids(new):
        return False
    if _someone_else(old, new):
        return False
    return bool(_subject_words(old) & _subject_words(new))


def superseded_by(entries: list[str], new: str) -> list[int]:
    """Indices of the ``entries`` that ``new`` supersedes by rule, the one to replace first:
    an entry giving the same attribute, then the entries ``new`` :func:`updates`, newest
    first (so MEMORY.md shows the current value only). The one rule for every writer: the
    memory tool's add and both consolidation paths."""
    if not states(new):
        return []
    keyed = [i for i, old in enumerate(entries) if same_attribute(old, new)]
    return keyed + [i for i in reversed(range(len(entries))) if updates(entries[i], new)]


def _ids(text: str) -> set[str]:
    """The ticket, order or incident ids ``text`` names, case-folded."""
    return {m.casefold() for m in _ID.findall(text)}


def _someone_else(old: str, new: str) -> bool:
    """Whether ``new`` is about other people than ``old`` (and hands nothing over)."""
    people_old, people_new = _people(old), _people(new)
    return bool(
        people_old and people_new and not people_old & people_new and not _HANDOVER.search(new)
    )


_LABEL_HEAD = re.compile(r"^\s*\w+\s*[:：]\s*")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)([A-Z][\w'-]*)")


def _people(entry: str) -> set[str]:
    """Names in ``entry``: capitalised words that do not merely start a sentence (or follow a
    ``Label:``), other than months and days, and the person names jieba tags in Chinese."""
    text = _LABEL_HEAD.sub("", unicodedata.normalize("NFKC", entry))
    starts = {m.group(1).casefold() for m in _SENTENCE_START.finditer(text)}
    words = {m.group(0).casefold() for m in re.finditer(r"\b[A-Z][a-z][\w'-]*", text)}
    found = words - starts - _CALENDAR
    if _HAN.search(text):
        found |= _chinese_anchors(text, flags=("nr",))
    return found
