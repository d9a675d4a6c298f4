"""Forget: remove a fact, or everything about a person, from every layer, and say what went.

Other systems delete a record and leave it in their indexes and summaries. Here one call
goes through every place a text can be: topic files (every employee's, both library
partitions), trackers (tasks, goals, reflections, proposals), journals, MEMORY.md entries and
HISTORY.md lines; then the search index drops every document built from a file it changed and
syncs those folders again, so a search afterwards cannot find the text. A topic left with no
entry is deleted, not kept as a shell its title would still be found by. The report lists each
removal with its layer and file.

Journals are append-only and histories are only appended to: forget is the one exception,
and it goes through each layer's own removal (:meth:`Journal.forget`,
:meth:`HistorySummary.forget`, ...), which rewrite a file atomically under the lock its writers
hold and keep the rest of it byte for byte. Matching is the layers' own: the text, normalised
(case, full/half width and spacing do not matter), found anywhere in an entry.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass, field
from glob import escape as glob_escape
from pathlib import Path

from framework.data_folder import HISTORY_FILE, session_name
from framework.errors import InputError
from framework.memory.similarity import normalize
from framework.memory.store import MemoryStore
from framework.names import check_name, is_name

from .base import KnowledgeBase
from .documents import Partition
from .library import PARTITIONS
from .search import Collection, collections_for
from .topics import TopicStore

__all__ = ["ForgetReport", "Forgotten", "forget_person", "forget_text"]


@dataclass(frozen=True, slots=True)
class Forgotten:
    """One removal: the layer (``topic``, ``library:shared``, ``library:isolated``,
    ``tracker``, ``journal``, ``memory``, ``history``, ``index``), where (a path under the data
    folder, ``#id`` after a tracker item's file, a doc id in the index) and what (the removed
    text, on one line)."""

    layer: str
    where: str
    what: str


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """Everything one forget removed (``removed`` empty: nothing matched ``needle``)."""

    removed: tuple[Forgotten, ...]
    needle: str

    def render(self) -> str:
        """One line per removal for people to read, or that nothing matched."""
        if not self.removed:
            return f"nothing matched {self.needle!r}"
        lines = [f"forgot {len(self.removed)} item(s) matching {self.needle!r}:"]
        lines += [f"  {f.layer:<16} {f.where}: {f.what}" for f in self.removed]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: ``{"needle": ..., "removed": [{"layer", "where", "what"}, ...]}``."""
        return {
            "needle": self.needle,
            "removed": [{"layer": f.layer, "where": f.where, "what": f.what} for f in self.removed],
        }


async def forget_text(
    kb: KnowledgeBase,
    text: str,
    *,
    memory: MemoryStore | None = None,
    employee: str | None = None,
) -> ForgetReport:
    """Remove every entry containing ``text`` (normalised) from every knowledge layer, and
    from MEMORY.md entries and HISTORY.md lines when ``memory`` is given; then bring the
    search index in line. ``employee``: only that employee's topics, trackers, journals,
    memory and DM histories (the library is everyone's: it is always included).

    Empty text is an :class:`InputError`; text that matches nothing gives an empty report."""
    if not normalize(text):
        raise InputError(f"{text!r} has no words to forget", field="text", fix="say what to forget")
    if employee is not None:
        check_name(employee, field="employee")
    log = _Log()
    try:
        await asyncio.to_thread(_forget_files, kb, text, memory, employee, log)
    finally:  # a layer that failed half-way must not leave the others' text in the index
        await _resync(kb, log)
    return ForgetReport(tuple(log.out), text)


async def forget_person(
    kb: KnowledgeBase, person: str, *, memory: MemoryStore | None = None
) -> ForgetReport:
    """Everything about ``person``: with ``memory``, every employee's MEMORY.md folder about
    them (``memory/*/{person}/``) and the HISTORY.md of their DMs (``dm:{person}@*``) are
    deleted; then every entry, tracker item, journal entry, memory entry and history line
    naming them goes as with :func:`forget_text`. Without ``memory``: the knowledge layers."""
    check_name(person, field="person")
    log = _Log()
    try:
        if memory is not None:
            await asyncio.to_thread(_person_folders, memory, person, log)
        await asyncio.to_thread(_forget_files, kb, person, memory, None, log)
    finally:
        await _resync(kb, log)
    return ForgetReport(tuple(log.out), person)


@dataclass
class _Log:
    """What a forget removed so far, and the files and folders it changed (for the index)."""

    out: list[Forgotten] = field(default_factory=list)
    touched: list[Path] = field(default_factory=list)
    folders: set[Path] = field(default_factory=set)
    """Touched paths that are folders (deleted ones no longer say so themselves)."""

    def add(
        self, layer: str, root: Path, path: Path, what: str, item: str = "", *, folder: bool = False
    ) -> None:
        self.touched.append(path)
        if folder:
            self.folders.add(path.resolve())
        try:
            where = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:  # a data folder reached through another path: say it whole
            where = str(path)
        self.out.append(Forgotten(layer, where + item, " ".join(what.split())))


def _forget_files(
    kb: KnowledgeBase, text: str, memory: MemoryStore | None, employee: str | None, log: _Log
) -> None:
    # The isolated partition is refused to readers knowledge.yaml does not list; forget is an
    # admin operation, so it opens both partitions' stores directly.
    stores = [("topic", kb.topics(name)) for name in _employees(kb.folder.knowledge_dir, employee)]
    for p in PARTITIONS:
        root, cats = kb.library.path(p), kb.config.categories
        store = TopicStore(root, categories=cats, today=kb.today, locks=kb.locks)
        stores.append((f"library:{p}", store))
    for layer, store in stores:
        if store.root.is_dir():
            for r in store.remove_entry(text):
                log.add(layer, kb.data_dir, store.root / r.category / f"{r.slug}.md", r.text)
    for gone in kb.trackers.remove_matching(text, employee=employee):
        file = f"{gone.employee}/{gone.kind}.json" if gone.employee else "proposals.json"
        path, what = kb.folder.trackers_dir / file, _item_text(gone.item)
        log.add("tracker", kb.data_dir, path, what, f"#{gone.item.id}")
    for path, entry in kb.journal.forget(text, employee):
        log.add("journal", kb.data_dir, path, entry)
    if memory is None:
        return
    folder = memory.folder
    for path in folder.memory_files():
        owner, user = path.parent.parent.name, path.parent.name
        if not (is_name(owner) and is_name(user)) or employee not in (None, owner):
            continue  # a hand-made folder no employee or person could have
        for change in memory.memory(owner, user).forget(text):
            log.add("memory", folder.root, path, f"[{change.section}] {change.old}")
    for name in _sessions(folder.history_dir, "*"):
        if employee is None or name.endswith(f"@{employee}"):
            summary = memory.history(name)
            for line in summary.forget(text):
                log.add("history", folder.root, summary.path, line)


def _person_folders(memory: MemoryStore, person: str, log: _Log) -> None:
    folder = memory.folder
    for path in folder.memory_files():
        if path.parent.name == person and is_name(path.parent.parent.name):
            held = ", ".join(sorted(p.name for p in path.parent.iterdir() if p.is_file()))
            with memory.locks.hold(path):  # the lock MEMORY.md's writers take: none is mid-write
                shutil.rmtree(path.parent)
            log.add("memory", folder.root, path.parent, f"deleted ({held})", folder=True)
    for name in _sessions(folder.history_dir, f"dm:{glob_escape(person)}@*"):
        path = folder.history_file(name)
        with memory.locks.hold(path):
            shutil.rmtree(path.parent)
        log.add("history", folder.root, path.parent, "deleted (the DM's HISTORY.md)", folder=True)


async def _resync(kb: KnowledgeBase, log: _Log) -> None:
    """Drop every indexed document built from a touched file or folder, whatever collection
    synced it, then sync the standard collections holding them (their other entries stay
    findable). A document from a folder synced under another name is restored by a rebuild,
    which syncs every folder the index remembers. Documents of deleted folders are reported."""
    paths = {p.resolve() for p in log.touched}
    if not paths or not kb.index_built:
        return  # an index built later is built from the files as they are now
    index = await kb.index()
    dropped: set[str] = set()
    for path in sorted(paths):
        # A topic forget left empty is deleted: its documents go by its name, as a file's.
        folder = path.is_dir() or path in log.folders
        gone = await index.remove_where(source_prefix=f"{path}/" if folder else str(path))
        dropped.update(gone)
        if folder and not path.exists():  # a deleted folder: its documents are gone for good
            log.out += [
                Forgotten("index", doc_id, "dropped from the search index") for doc_id in gone
            ]
    standard = [*collections_for(kb, None), *collections_for(kb, None, Partition.ISOLATED)]
    synced: list[Collection] = []
    for c in standard:
        if any(p.is_relative_to(c.root.resolve()) for p in paths):
            await index.sync_files(c.root, c.name, c.partition, scope=c.scope)
            synced.append(c)
    if any(not any(d.startswith(f"{c.name}:") for c in synced) for d in dropped):
        await index.rebuild()


def _employees(root: Path, employee: str | None) -> list[str]:
    if employee is not None or not root.is_dir():
        return [employee] if employee else []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and is_name(p.name))


def _sessions(root: Path, pattern: str) -> list[str]:
    """Session folder names under ``history/`` matching ``pattern`` that hold a HISTORY.md."""
    if not root.is_dir():
        return []
    found = [p.parent.name for p in root.glob(f"{pattern}/{HISTORY_FILE}") if p.is_file()]
    return sorted(name for name in found if _is_session(name))


def _is_session(name: str) -> bool:
    try:
        return session_name(name) == name
    except InputError:
        return False  # a hand-made folder no session could have written


def _item_text(item: object) -> str:
    for name in ("task", "goal", "what", "recommendation"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    return str(item)
