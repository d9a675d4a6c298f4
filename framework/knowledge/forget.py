"""Forget: remove a fact, or everything about a person, from every layer, and say what went.

Other systems delete a record and leave it in their indexes and summaries. Here one call
goes through every place a text can be: topic files (every employee's, both library
partitions), trackers (tasks, goals, reflections, proposals), journals, MEMORY.md entries and
HISTORY.md lines; then the search index is synced with the files it was built from, so a
search afterwards cannot find it. The report lists each removal with its layer and file.
"""

from __future__ import annotations

import asyncio
import shutil
from dataclasses import dataclass
from pathlib import Path

from framework.errors import InputError
from framework.memory.similarity import normalize
from framework.memory.store import MemoryStore
from framework.names import check_name, is_name

from .base import KnowledgeBase
from .documents import Partition
from .search import collections_for, sync
from .topics import TopicStore

__all__ = ["ForgetReport", "Forgotten", "forget_person", "forget_text"]


@dataclass(frozen=True, slots=True)
class Forgotten:
    """One removal: the layer, where (a file under the data folder, or an item), what."""

    layer: str
    where: str
    what: str


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """Everything one forget removed."""

    needle: str
    removed: tuple[Forgotten, ...]

    def render(self) -> str:
        """One line per removal, or that nothing matched."""
        if not self.removed:
            return f"nothing matched {self.needle!r}"
        lines = [f"forgot {len(self.removed)} thing(s) matching {self.needle!r}:"]
        lines += [f"  {f.layer:<16} {f.where}: {f.what}" for f in self.removed]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
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
    """Remove every entry containing ``text`` (normalised: case, width and spacing do not
    matter) from the knowledge layers, and from MEMORY.md and HISTORY.md files when
    ``memory`` is given; ``employee``: only that employee's topics, trackers, journals and
    memory (the library is everyone's: it is always included)."""
    if not normalize(text):
        raise InputError(f"{text!r} has no words to forget", field="text", fix="say what to forget")
    if employee is not None:
        check_name(employee, field="employee")
    removed = await asyncio.to_thread(_forget_files, kb, text, memory, employee)
    await _resync(kb)
    return ForgetReport(text, tuple(removed))


async def forget_person(
    kb: KnowledgeBase, person: str, *, memory: MemoryStore | None = None
) -> ForgetReport:
    """Everything about ``person``: every entry naming them (as :func:`forget_text`), their
    MEMORY.md folders under every employee, and the HISTORY.md of their DMs."""
    check_name(person, field="person")
    found = await forget_text(kb, person, memory=memory)
    removed = list(found.removed)
    if memory is not None:
        removed += await asyncio.to_thread(_person_files, memory, person)
    return ForgetReport(person, tuple(removed))


def _forget_files(
    kb: KnowledgeBase, text: str, memory: MemoryStore | None, employee: str | None
) -> list[Forgotten]:
    out: list[Forgotten] = []
    stores: list[tuple[str, TopicStore]] = [
        (f"library:{p}", TopicStore(kb.library.path(p), categories=kb.config.categories))
        for p in ("shared", "isolated")
    ]
    for name in [employee] if employee else _names(kb.folder.knowledge_dir):
        stores.append(("topic", kb.topics(name)))
    for layer, store in stores:
        if store.root.is_dir():
            for r in store.remove_entry(text):
                out.append(
                    Forgotten(layer, _rel(kb, store.root / r.category / f"{r.slug}.md"), r.text)
                )
    for gone in kb.trackers.remove_matching(text, employee=employee):
        where = f"trackers/{gone.employee or ''}/{gone.kind}#{gone.item.id}".replace("//", "/")
        out.append(Forgotten("tracker", where, _text_of(gone.item)))
    for path, entry in kb.journal.forget(text, employee):
        out.append(Forgotten("journal", _rel(kb, path), entry))
    if memory is not None:
        out += _forget_memory(kb, memory, text, employee)
    return out


def _forget_memory(
    kb: KnowledgeBase, memory: MemoryStore, text: str, employee: str | None
) -> list[Forgotten]:
    out: list[Forgotten] = []
    for path in kb.folder.memory_files():
        owner, user = path.parent.parent.name, path.parent.name
        if employee is not None and owner != employee:
            continue
        for change in memory.memory(owner, user).forget(text):
            out.append(Forgotten("memory", _rel(kb, path), f"[{change.section}] {change.old}"))
    history = kb.folder.history_dir
    for path in sorted(history.glob("*/HISTORY.md")) if history.is_dir() else []:
        if employee is not None and not path.parent.name.endswith(f"@{employee}"):
            continue
        summary = memory.history(path.parent.name)
        out += [Forgotten("history", _rel(kb, path), line) for line in summary.forget(text)]
    return out


def _person_files(memory: MemoryStore, person: str) -> list[Forgotten]:
    folder = memory.folder
    out: list[Forgotten] = []
    for path in folder.memory_files():
        if path.parent.name == person:
            shutil.rmtree(path.parent)
            where = str(path.parent.relative_to(folder.root))
            out.append(Forgotten("memory", where, "MEMORY.md and what rooms may see"))
    history = folder.history_dir
    for path in sorted(history.glob(f"dm:{person}@*")) if history.is_dir() else []:
        shutil.rmtree(path)
        out.append(Forgotten("history", str(path.relative_to(folder.root)), "the DM's history"))
    return out


async def _resync(kb: KnowledgeBase) -> None:
    """Bring every collection in line with its files, so nothing forgotten is found."""
    if not kb.index_path.exists():
        return  # built from the files on first search, after the removal
    index = await kb.index()
    await sync(index, collections_for(kb, None))
    await sync(index, collections_for(kb, None, Partition.ISOLATED))


def _names(root: Path) -> list[str]:
    return (
        sorted(p.name for p in root.iterdir() if p.is_dir() and is_name(p.name))
        if root.is_dir()
        else []
    )


def _text_of(item: object) -> str:
    for name in ("task", "goal", "what", "recommendation"):
        value = getattr(item, name, None)
        if isinstance(value, str):
            return value
    return str(item)


def _rel(kb: KnowledgeBase, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(kb.data_dir.resolve()))
    except ValueError:
        return str(path)
