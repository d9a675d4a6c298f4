"""Consolidated facts that replace a MEMORY.md entry, by rule or by the model.

A fact a person states later may update one already kept ("Correction: the meeting moved to
3pm", "Sam is now the lead"). Consolidation applies the memory tool's rule
(:func:`~framework.memory.fact_rules.superseded_by`) on both paths:

* offline, a person's message (whole, else each sentence) that updates one of their current
  entries becomes a fact replacing it, although no extraction rule recognised it;
* a model is shown the current entries, numbered (:func:`numbered`), and a fact it states may
  name the one it replaces (``replaces``); a number that names no entry shown for that person
  is ignored with a reason (:func:`resolve`), and the fact is added as a new one.

Either way the write is :meth:`~framework.memory.memory_file.MemoryFile.add` with the entry to
replace: MEMORY.md, which prompts carry, shows the new value, and the old one is kept as
superseded in ``facts.json`` (``staffroom memory`` shows it), never in a prompt.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from framework.errors import InputError, StorageError
from framework.memory.fact_rules import related, superseded_by
from framework.memory.memory_file import MemoryChange, MemoryFile
from framework.phrases import Phrase
from framework.sessions.events import Event
from framework.statements import Fact

__all__ = ["KnownEntry", "NewFact", "known_entries", "numbered", "resolve", "rule_updates"]

ADDED_AS_NEW = Phrase(
    en="added as a new fact",
    zh="作为新事实写入",
)
NO_SUCH_ENTRY = Phrase(
    en="the model said {entry!r} replaces entry {n}, but the entries shown run 1-{count}",
    zh="模型说 {entry!r} 取代第 {n} 条，但列出的只有第 1-{count} 条",
)
NONE_SHOWN = Phrase(
    en="the model said {entry!r} replaces entry {n}, but no entries were shown",
    zh="模型说 {entry!r} 取代第 {n} 条，但没有列出任何条目",
)
NO_NUMBER = Phrase(
    en="the model said {entry!r} replaces {given!r}, which is no entry number",
    zh="模型说 {entry!r} 取代 {given!r}，这不是条目编号",
)
OTHER_PERSON = Phrase(
    en="the model said {entry!r} (about {user}) replaces entry {n}, which is about {other}",
    zh="模型说 {entry!r}（关于 {user}）取代第 {n} 条，而那条是关于 {other} 的",
)
UNRELATED = Phrase(
    en="the model said {entry!r} replaces entry {n} ({old!r}), which is about something else",
    zh="模型说 {entry!r} 取代第 {n} 条（{old!r}），但那条说的是别的事",
)
_MAX_CANDIDATE = 300
"""A message longer than this is tried sentence by sentence only: an entry is a short line."""
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


@dataclass(frozen=True, slots=True)
class KnownEntry:
    """An entry of a person's MEMORY.md as consolidation saw it before the batch."""

    user: str
    section: str
    entry: str


@dataclass(frozen=True, slots=True)
class NewFact:
    """A fact for ``user``'s MEMORY.md, and the entry it replaces (None: by rule, if any)."""

    user: str
    fact: Fact
    replaces: KnownEntry | None = None

    def write(self, memory: MemoryFile, *, source: str) -> MemoryChange:
        """Add the fact to ``memory``, replacing :attr:`replaces` when that file still holds
        it (each employee's file is its own: one may not have it, and then the rule decides,
        in the section of the entry named)."""
        if self.replaces is None:
            return memory.add(self.fact.section, self.fact.entry, source=source)
        old = self.replaces
        return memory.add(old.section, self.fact.entry, source=source, replaces=old.entry)


def known_entries(
    memory_for: Callable[[str, str], MemoryFile], employee: str, users: Iterable[str]
) -> list[KnownEntry]:
    """The entries ``employee`` keeps about each of ``users``, in file order. A file that
    cannot be read contributes nothing here (its writes say why)."""
    found: list[KnownEntry] = []
    for user in sorted(set(users)):
        try:
            doc = memory_for(employee, user).read()
        except (InputError, StorageError):
            continue
        found += [KnownEntry(user, s, e) for s, entries in doc.sections.items() for e in entries]
    return found


def numbered(known: Sequence[KnownEntry], budget: int) -> tuple[list[KnownEntry], str]:
    """The entries shown to a model (the first that fit in ``budget`` characters) and their
    text, one per line: ``1. alice / facts: …``; a fact's ``replaces`` counts from 1."""
    shown: list[KnownEntry] = []
    lines: list[str] = []
    used = 0
    for entry in known:
        line = f"{len(shown) + 1}. {entry.user} / {entry.section}: {entry.entry}"
        used += len(line) + 1
        if used > budget:
            break
        shown.append(entry)
        lines.append(line)
    return shown, "\n".join(lines)


def resolve(
    user: str, entry: str, given: int | str | None, shown: Sequence[KnownEntry], language: str
) -> tuple[KnownEntry | None, dict[str, str] | None]:
    """The shown entry a model's ``replaces`` names for a fact about ``user``; else None and,
    when something was given, the ``fallback`` event's content saying why it was ignored (no
    number, no such number, an entry about someone else): the fact is then added as new."""
    if given is None:
        return None, None
    number = re.fullmatch(r"\s*(?:#|no\.?|entry)?\s*(-?\d+)(?:\.0*)?\s*", str(given), re.I)
    n = int(number.group(1)) if number else None
    if n is None:
        why = NO_NUMBER(language, entry=entry, given=str(given))
    elif not shown:
        why = NONE_SHOWN(language, entry=entry, n=n)
    elif not 1 <= n <= len(shown):
        why = NO_SUCH_ENTRY(language, entry=entry, n=n, count=len(shown))
    elif (old := shown[n - 1]).user != user:
        why = OTHER_PERSON(language, entry=entry, user=user, n=n, other=old.user)
    elif not related(old.entry, entry):
        why = UNRELATED(language, entry=entry, n=n, old=old.entry)
    else:
        return old, None
    return None, {"what": "memory", "used": ADDED_AS_NEW(language), "reason": why}


def rule_updates(
    messages: Sequence[Event], humans: set[str], known: Sequence[KnownEntry], taken: set[str]
) -> list[NewFact]:
    """Facts the offline path keeps because they update a known entry of their speaker:
    each person's message, whole when it is short, else sentence by sentence. ``taken``:
    entries already kept from the batch (their own add applies the rule)."""
    found: list[NewFact] = []
    replaced: set[KnownEntry] = set()
    for event in messages:
        if event.author not in humans:
            continue
        whole = event.text.strip()
        parts = [s.strip() for s in _SENTENCE.split(whole) if s.strip()]
        tries = ([whole] if "\n" not in whole and len(whole) <= _MAX_CANDIDATE else []) + parts
        for candidate in dict.fromkeys(tries):
            mine = [k for k in known if k.user == event.author and k not in replaced]
            old = _superseded(mine, candidate)
            if old is None or candidate in taken:
                continue
            found.append(NewFact(event.author, Fact(old.section, candidate), old))
            replaced.add(old)
            taken.add(candidate)
            if candidate == whole:
                break  # the whole message is the update: its sentences are not others
    return found


def _superseded(known: Sequence[KnownEntry], new: str) -> KnownEntry | None:
    """The entry ``new`` supersedes by the rule, section by section (None: another fact)."""
    for section in dict.fromkeys(k.section for k in known):
        entries = [k for k in known if k.section == section]
        hits = superseded_by([k.entry for k in entries], new)
        if hits:
            return entries[hits[0]]
    return None
