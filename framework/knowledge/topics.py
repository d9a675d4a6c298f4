"""Layer 4, topic files: what an employee has learnt, one markdown file per topic.

A :class:`TopicStore` holds one collection (an employee's ``knowledge/{employee}/``, or a
library partition) as ``{category}/{slug}.md`` files (the format: :mod:`.topic_file`). A topic
is updated in place, never split across dated files: new entries are added (a duplicate,
compared normalised, is not), a replaced entry moves to ``## Superseded`` with what replaced
it, and each change leaves a short dated note (the newest :data:`MAX_CHANGES` are kept).
Search and prompts use :meth:`TopicStore.current_entries`, which leaves superseded entries
out. Only "forget" (:meth:`TopicStore.remove_entry`, :meth:`TopicStore.remove_topic`) deletes.

Writes hold the store's lock (the one of ``{root}/.topics``: ``.topics.lock``, or an advisory
lock on the database; a topic must never become two files in two categories) and replace
files atomically; a hand-broken file is an :class:`InputError`
naming its line, and is never overwritten. All I/O blocks: call it from a worker thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from framework.errors import InputError, UnknownNameError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.knowledge.files import read_utf8, write_atomic
from framework.knowledge.topic_file import (
    Change,
    Promotion,
    Superseded,
    Topic,
    parse_topic,
    render_superseded,
)
from framework.memory.similarity import normalize
from framework.names import check_name
from framework.specs.knowledge_file import DEFAULT_CATEGORIES, topic_slug

__all__ = ["MAX_CHANGES", "Removal", "TopicChange", "TopicStore"]

MAX_CHANGES = 20
"""Change notes kept per topic (the oldest go first)."""


@dataclass(frozen=True, slots=True)
class TopicChange:
    """What :meth:`TopicStore.update` did (``changed`` False: nothing was written)."""

    topic: Topic
    created: bool = False
    added: list[str] = field(default_factory=list)
    replaced: list[tuple[str, str]] = field(default_factory=list)
    not_found: list[str] = field(default_factory=list)
    """``replace`` keys that matched no current entry (their new text was added)."""
    changed: bool = False


@dataclass(frozen=True, slots=True)
class Removal:
    """What "forget" removed: a topic's entry (or superseded line)."""

    category: str
    slug: str
    text: str


class TopicStore:
    """One collection of topic files under ``root``: ``{category}/{slug}.md``; ``locks``: how
    its writers exclude each other (default: ``.topics.lock``)."""

    def __init__(
        self,
        root: Path,
        *,
        categories: Sequence[str] = DEFAULT_CATEGORIES,
        today: Callable[[], date] = date.today,
        max_changes: int = MAX_CHANGES,
        locks: FileLocks | None = None,
    ) -> None:
        self.root = Path(root)
        self.locks = locks or LocalFileLocks()
        self.categories = tuple(check_name(c, field="category") for c in categories)
        self._today = today
        self._max_changes = max_changes
        self._lock = self.root / ".topics"

    def find(self, topic: str, category: str | None = None) -> Path | None:
        """The file of ``topic`` (a title or slug) in ``category`` or any category, if any.

        The same slug in two categories (made by hand) is an error unless ``category`` says
        which.
        """
        found = self._matches(_slug(topic), category)
        if len(found) > 1:
            raise InputError(
                f"topic '{found[0].stem}' is in several categories: "
                + ", ".join(p.parent.name for p in found),
                file=found[1],
                fix="pass category=..., or merge the files into one",
            )
        return found[0] if found else None

    def show(self, topic: str, category: str | None = None) -> Topic:
        """The topic (an :class:`UnknownNameError` listing the topics when there is none)."""
        path = self.find(topic, category)
        if path is None:
            known = ", ".join(f"{t.category}/{t.slug}" for t in self.list()) or "none"
            raise UnknownNameError(
                f"no topic '{_slug(topic)}' in {self.root}",
                field="topic",
                fix=f"use one of: {known}",
            )
        return self._read(path)

    def current_entries(self, topic: str, category: str | None = None) -> list[str]:
        """The topic's current entries, superseded ones left out ([] when there is no topic)."""
        path = self.find(topic, category)
        return list(self._read(path).entries) if path else []

    def stale(self, days: int, today: date | None = None) -> list[Topic]:
        """Topics not reviewed in the last ``days`` days, least recently reviewed first."""
        day = today or self._today()
        old = [t for t in self.list() if (day - t.last_review).days >= days]
        return sorted(old, key=lambda t: t.last_review)

    def update(
        self,
        topic: str,
        category: str,
        *,
        add: Iterable[str] = (),
        replace: Mapping[str, str] | None = None,
        note: str | None = None,
        title: str | None = None,
        promotion: Promotion | None = None,
    ) -> TopicChange:
        """Update ``topic`` in place (created in ``category`` when new; an existing topic is
        updated in the category it is in). ``add`` skips duplicates; ``replace`` moves each
        old entry to Superseded and puts the new one in its place. A change note (``note``,
        or one that counts the changes) is recorded when anything changed.
        ``promotion`` records where a library topic came from (see ``library.py``)."""
        add = [add] if isinstance(add, str) else add  # one entry, not one per character
        with self.locks.hold(self._lock):
            slug, category = _slug(topic), self._category(category)
            found = self._matches(slug, None)
            here = [p for p in found if p.parent.name == category]
            path = (here or found or [self.root / category / f"{slug}.md"])[0]
            today = self._today()
            old = self._read(path) if path.exists() else None
            base = old or Topic(
                path.stem, path.parent.name, path, title or topic.strip(), today, ()
            )
            entries, superseded = list(base.entries), list(base.superseded)
            added: list[str] = []
            replaced: list[tuple[str, str]] = []
            missing: list[str] = []
            for before, after in (replace or {}).items():
                at, after = _index(entries, before), _one_line(after)
                if at is None:
                    missing.append(before)
                    add = [*add, after]  # the new knowledge is kept all the same
                elif normalize(after) != normalize(entries[at]):
                    superseded.append(Superseded(entries[at], after, today))
                    replaced.append((entries.pop(at), after))
                    if _index(entries, after) is None:
                        entries.insert(at, after)
            for text in add:
                if _index(entries, text) is None:
                    entries.append(_one_line(text))
                    added.append(entries[-1])
            promoted = list(base.promoted_from)
            if promotion and all(
                (p.source, p.topic) != (promotion.source, promotion.topic) for p in promoted
            ):
                promoted.append(promotion)
            if not (added or replaced or len(promoted) > len(base.promoted_from)):
                return TopicChange(base, not_found=missing)
            note = _one_line(note or _summary(old is None, added, replaced))
            changes = (*base.changes, Change(date=today, note=note))[-self._max_changes :]
            new = dataclasses.replace(
                base,
                entries=tuple(entries),
                superseded=tuple(superseded),
                changes=changes,
                promoted_from=tuple(promoted),
            )
            write_atomic(path, new.render())
        return TopicChange(new, old is None, added, replaced, missing, changed=True)

    def review(self, topic: str, category: str | None = None, *, day: date | None = None) -> Topic:
        """Record that the topic was reviewed on ``day`` (default today): it is not stale."""
        with self.locks.hold(self._lock):
            old = self.show(topic, category)
            new = dataclasses.replace(old, last_review=day or self._today())
            write_atomic(old.path, new.render())
        return new

    def remove_entry(
        self, text: str, *, topic: str | None = None, category: str | None = None
    ) -> list[Removal]:
        """Forget: remove every entry and superseded line containing ``text`` (normalised),
        in one topic or all; returns exactly what was removed. A topic left with nothing is
        deleted: its title and notes alone would still be found, and say what it held."""
        needle = normalize(text)
        if not needle:
            raise InputError(
                f"{text!r} has no words to match", field="text", fix="say what to forget"
            )
        removed: list[Removal] = []
        with self.locks.hold(self._lock):
            for old in [self.show(topic, category)] if topic else self.list():
                keep = [e for e in old.entries if needle not in normalize(e)]
                keep_old = [
                    s for s in old.superseded if needle not in normalize(f"{s.text} {s.by or ''}")
                ]
                gone = [e for e in old.entries if e not in keep]
                gone += [render_superseded(s) for s in old.superseded if s not in keep_old]
                if not gone:
                    continue
                if not (keep or keep_old):
                    old.path.unlink()
                else:
                    note = Change(date=self._today(), note=f"forgot {len(gone)} on request")
                    new = dataclasses.replace(
                        old,
                        entries=tuple(keep),
                        superseded=tuple(keep_old),
                        changes=(*old.changes, note)[-self._max_changes :],
                    )
                    write_atomic(old.path, new.render())
                removed += [Removal(old.category, old.slug, g) for g in gone]
        return removed

    def remove_topic(self, topic: str, category: str | None = None) -> Topic:
        """Forget a whole topic: delete its file and return what it held."""
        with self.locks.hold(self._lock):
            old = self.show(topic, category)
            old.path.unlink()
        return old

    def _matches(self, slug: str, category: str | None) -> list[Path]:
        cats = [self._category(category)] if category else self.categories
        return [p for c in cats if (p := self.root / c / f"{slug}.md").exists()]

    def _category(self, category: str) -> str:
        if category not in self.categories:
            raise InputError(
                f"unknown category {category!r}",
                field="category",
                fix=f"use one of: {', '.join(self.categories)} (categories in knowledge.yaml)",
            )
        return category

    def _read(self, path: Path) -> Topic:
        text = read_utf8(path)
        if text is None:
            raise UnknownNameError(f"no topic file {path}", file=path, fix="check the topic name")
        return parse_topic(text, path)

    # Defined last: below it, `list` in the class body would name this method, not the type.
    def list(self) -> list[Topic]:
        """Every topic, by category (in configured order) and slug."""
        return [
            self._read(path)
            for category in self.categories
            if (self.root / category).is_dir()
            for path in sorted((self.root / category).glob("*.md"))
            if path.is_file()
        ]


def _slug(topic: str) -> str:
    slug = topic_slug(topic)
    if not slug:
        raise InputError(f"topic {topic!r} has no letters or digits", field="topic", fix="name it")
    return check_name(slug, field="topic")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _index(entries: list[str], text: str) -> int | None:
    key = normalize(text)
    if not key:
        raise InputError(f"entry {text!r} has no words", field="entry", fix="write the entry")
    return next((i for i, entry in enumerate(entries) if normalize(entry) == key), None)


def _summary(created: bool, added: list[str], replaced: list[tuple[str, str]]) -> str:
    if created:
        return f"created ({len(added)} added)"
    parts = [f"added {len(added)}"] if added else []
    parts += [f"replaced {len(replaced)}"] if replaced else []
    return ", ".join(parts) or "recorded its source"
