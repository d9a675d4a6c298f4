"""Layer 3, trackers: what an employee has to do, as JSON files people can read and edit.

``trackers/{employee}/tasks.json``, ``goals.json``, ``reflections.json`` and the cross-employee
``trackers/proposals.json``, each ``{"format": 1, "items": [...]}``::

    {"format": 1, "items": [
      {"id": "t-001", "status": "waiting", "task": "拿到跳出率前 10 的页面数据",
       "type": "act", "priority": "high", "waiting_for": "alice",
       "notes": [{"date": "2026-05-30", "note": "open → waiting: alice 在导数据"}],
       "created": "2026-05-30", "updated": "2026-05-30", "source": "dm:alice@pm"}]}

Nothing is deleted: items end ``done`` or ``abandoned`` (proposals ``approved`` or ``rejected``,
by a person), and every status change is a dated note. Adding deduplicates on the normalised
text (case, whitespace, punctuation, full-width forms): an open match gets a note instead of
a twin; a closed one is returned as it is, and reopened only when asked.
:meth:`Trackers.remove_matching` is the one way out, for an explicit "forget".
Files are read and written through :mod:`framework.knowledge.files` (locked, atomic, a broken
file named with line and field and never overwritten). All I/O blocks: call from a thread.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from framework.errors import InputError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.knowledge.files import ItemsDoc, JsonItems, build
from framework.knowledge.tracker_items import (
    LAST_FIELDS,
    DatedNote,
    Goal,
    Proposal,
    Reflection,
    Task,
    TrackerItem,
    TrackerKind,
    next_due,
)
from framework.memory.similarity import normalize
from framework.names import check_name, is_name

__all__ = ["Added", "OpenItems", "Removed", "Trackers"]

_PRIORITY = {"high": 0, "medium": 1, "low": 2}

M = TypeVar("M", bound=TrackerItem)


@dataclass(frozen=True, slots=True)
class Added(Generic[M]):
    """What an add did: ``created`` an item, ``merged`` into an open one (a note was added),
    ``reopened`` a closed one (asked for), or found it ``closed`` (left as it is)."""

    item: M
    outcome: Literal["created", "merged", "reopened", "closed"]


@dataclass(frozen=True, slots=True)
class OpenItems:
    """What an employee loads at session start."""

    tasks: list[Task]
    """Open and waiting tasks, highest priority first, then oldest first."""
    goals: list[Goal]
    reflections: list[Reflection]
    """Reflections due today."""
    proposals: list[Proposal]
    """Open proposals made by the employee or concerning them."""


@dataclass(frozen=True, slots=True)
class Removed:
    """One item "forget" removed, and from where (``employee`` is None for proposals)."""

    kind: Literal["tasks", "goals", "reflections", "proposals"]
    employee: str | None
    item: TrackerItem


_DOCS: dict[TrackerKind, type[ItemsDoc[Any]]] = {
    "tasks": ItemsDoc[Task],
    "goals": ItemsDoc[Goal],
    "reflections": ItemsDoc[Reflection],
}
# Held for the process's life: pydantic caches a parametrised model only while something
# references it, so `ItemsDoc[Proposal]` built anew in every turn's prompt cost ~1.4 ms.
_PROPOSALS_DOC: type[ItemsDoc[Proposal]] = ItemsDoc[Proposal]


class Trackers:
    """Every employee's trackers, and the shared proposals, under ``root`` (``trackers/``).

    ``today`` is the clock for the dates written (injected: tests and replays are exact);
    ``locks``: how the writers of one file exclude each other (default: ``<file>.lock``).
    """

    def __init__(
        self,
        root: Path,
        *,
        today: Callable[[], date] = date.today,
        locks: FileLocks | None = None,
    ) -> None:
        self.root = Path(root)
        self._today = today
        self._locks = locks or LocalFileLocks()

    def tasks(self, employee: str) -> list[Task]:
        """Every task of ``employee``, in file order."""
        return self._file(employee, "tasks", ItemsDoc[Task]).load()

    def goals(self, employee: str) -> list[Goal]:
        """Every goal of ``employee``, in file order."""
        return self._file(employee, "goals", ItemsDoc[Goal]).load()

    def reflections(self, employee: str) -> list[Reflection]:
        """Every reflection trigger of ``employee``, in file order."""
        return self._file(employee, "reflections", ItemsDoc[Reflection]).load()

    def proposals(self) -> list[Proposal]:
        """Every improvement proposal, in file order."""
        return self._proposals().load()

    def due(self, employee: str, today: date | None = None) -> list[Reflection]:
        """Open reflections whose next run (:func:`next_due`) is ``today`` or earlier."""
        day = today or self._today()
        return [r for r in self.reflections(employee) if r.is_open and next_due(r) <= day]

    def open_items(self, employee: str) -> OpenItems:
        """Open tasks (by priority), open goals, due reflections, and open proposals by or
        for ``employee``: what a session starts with."""
        tasks = sorted(
            (t for t in self.tasks(employee) if t.is_open),
            key=lambda t: (_PRIORITY[t.priority], t.created),
        )
        goals = [g for g in self.goals(employee) if g.is_open]
        mine = [p for p in self.proposals() if p.is_open and employee in (p.by, *p.for_)]
        return OpenItems(tasks, goals, self.due(employee), mine)

    def add_task(
        self,
        employee: str,
        task: str,
        *,
        type: Literal["think", "act"] = "act",
        priority: Literal["high", "medium", "low"] = "medium",
        waiting_for: str | None = None,
        source: str | None = None,
        note: str | None = None,
        reopen: bool = False,
    ) -> Added[Task]:
        """Add a task, or note it on the open task that says the same (see :class:`Added`)."""
        fields = {"task": task, "type": type, "priority": priority, "waiting_for": waiting_for}
        fields["status"] = "waiting" if waiting_for else "open"
        tracker = self._file(employee, "tasks", ItemsDoc[Task])
        return self._add(tracker, Task, fields, source, note, reopen)

    def add_goal(
        self,
        employee: str,
        goal: str,
        *,
        target_date: date | None = None,
        source: str | None = None,
        note: str | None = None,
        reopen: bool = False,
    ) -> Added[Goal]:
        """Add a goal, or note progress on the open goal that says the same."""
        tracker = self._file(employee, "goals", ItemsDoc[Goal])
        fields = {"goal": goal, "target_date": target_date}
        return self._add(tracker, Goal, fields, source, note, reopen)

    def add_reflection(
        self,
        employee: str,
        what: str,
        *,
        interval: str,
        source: str | None = None,
        note: str | None = None,
        reopen: bool = False,
    ) -> Added[Reflection]:
        """Add a recurring reflection (``weekly``, ``biweekly``, ``monthly`` or ``<N>d``),
        first due one interval after today."""
        tracker = self._file(employee, "reflections", ItemsDoc[Reflection])
        fields = {"what": what, "interval": interval}
        return self._add(tracker, Reflection, fields, source, note, reopen)

    def add_proposal(
        self,
        by: str,
        for_: list[str],
        observation: str,
        recommendation: str,
        *,
        source: str | None = None,
        note: str | None = None,
        reopen: bool = False,
    ) -> Added[Proposal]:
        """Propose an improvement to how ``for_`` (employees or people) work, for a person
        to :meth:`decide`. The same advice for the same people is one proposal."""
        targets = sorted({check_name(name, field="for") for name in for_})
        fields = {"by": check_name(by, field="by"), "for_": targets}
        fields |= {"observation": observation, "recommendation": recommendation}
        return self._add(self._proposals(), Proposal, fields, source, note, reopen)

    def add_note(self, employee: str, kind: TrackerKind, item_id: str, note: str) -> TrackerItem:
        """Append a dated note (a goal's progress) to one item."""
        tracker = self._file(employee, kind, _DOCS[kind])
        with tracker.edit() as items:
            item: TrackerItem = _find(items, item_id, tracker.path)
            _key(note, "note")
            self._note(item, note.strip())
            return item

    def set_status(
        self,
        employee: str,
        kind: TrackerKind,
        item_id: str,
        status: str,
        *,
        note: str | None = None,
        waiting_for: str | None = None,
    ) -> TrackerItem:
        """Move an item to ``status`` (a task waits for ``waiting_for``); recorded as a note."""
        tracker = self._file(employee, kind, _DOCS[kind])
        with tracker.edit() as items:
            item: TrackerItem = _find(items, item_id, tracker.path)
            if status not in item.STATUSES:
                fix = f"use one of: {', '.join(item.STATUSES)}"
                raise InputError(f"'{status}' is not a status of {kind}", field="status", fix=fix)
            if status != item.status or note:
                change = f"{item.status} → {status}"
                change += f" (for {waiting_for})" if waiting_for and status == "waiting" else ""
                change += f": {note.strip()}" if note else ""
                item.status = status
                if isinstance(item, Task):
                    item.waiting_for = waiting_for if status == "waiting" else None
                self._note(item, change)
            return item

    def finish(
        self, employee: str, kind: TrackerKind, item_id: str, *, note: str | None = None
    ) -> TrackerItem:
        """Mark a task or goal ``done``."""
        return self.set_status(employee, kind, item_id, "done", note=note)

    def abandon(
        self, employee: str, kind: TrackerKind, item_id: str, *, note: str | None = None
    ) -> TrackerItem:
        """Mark an item ``abandoned`` (it stays, with the reason in ``note``)."""
        return self.set_status(employee, kind, item_id, "abandoned", note=note)

    def mark_run(self, employee: str, reflection_id: str, *, day: date | None = None) -> Reflection:
        """Record that a reflection ran on ``day`` (default today); the next is due from then."""
        tracker = self._file(employee, "reflections", ItemsDoc[Reflection])
        with tracker.edit() as items:
            item = _find(items, reflection_id, tracker.path)
            item.last_run, item.updated = day or self._today(), self._today()
            return item

    def decide(
        self, proposal_id: str, *, approve: bool, by: str, note: str | None = None
    ) -> Proposal:
        """A person approves or rejects an open proposal (a decided one is an error)."""
        by = check_name(by, field="by")
        tracker = self._proposals()
        with tracker.edit() as items:
            item = _find(items, proposal_id, tracker.path)
            if not item.is_open:
                raise InputError(
                    f"proposal {proposal_id} was already {item.status} by {item.decided_by} "
                    f"on {item.decided_at}",
                    field="status",
                    fix="propose it again with add_proposal(..., reopen=True) to decide anew",
                )
            item.status = "approved" if approve else "rejected"
            item.decided_by, item.decided_at = by, self._today()
            self._note(item, f"{item.status} by {by}" + (f": {note.strip()}" if note else ""))
            return item

    def remove_matching(
        self, match: str | Callable[[TrackerItem], bool], *, employee: str | None = None
    ) -> list[Removed]:
        """Forget: delete every item ``match`` selects and return exactly those.

        ``match`` is a predicate, or a text found (normalised) in an item's words or notes.
        With ``employee`` only that employee's trackers and the proposals by or for them are
        searched; without, everyone's. Nothing else ever deletes an item.
        """
        selects = _contains(_key(match, "match")) if isinstance(match, str) else match
        names = [check_name(employee, field="employee")] if employee else self._employees()
        removed: list[Removed] = []
        for name in names:
            for kind, doc in _DOCS.items():
                with self._file(name, kind, doc).edit() as items:
                    removed += [Removed(kind, name, item) for item in _take(items, selects)]
        with self._proposals().edit() as proposals:
            gone = _take(proposals, lambda p: (employee in (None, p.by, *p.for_)) and selects(p))
        return removed + [Removed("proposals", None, p) for p in gone]

    def _file(self, employee: str, kind: TrackerKind, doc: type[ItemsDoc[M]]) -> JsonItems[M]:
        path = self.root / check_name(employee, field="employee") / f"{kind}.json"
        return JsonItems(path, doc, last=LAST_FIELDS, locks=self._locks)

    def _proposals(self) -> JsonItems[Proposal]:
        path = self.root / "proposals.json"
        return JsonItems(path, ItemsDoc[Proposal], last=LAST_FIELDS, locks=self._locks)

    def _employees(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and is_name(p.name))

    def _note(self, item: TrackerItem, note: str) -> None:
        item.log.append(DatedNote(date=self._today(), note=note))
        item.updated = self._today()

    def _add(
        self,
        tracker: JsonItems[M],
        model: type[M],
        fields: dict[str, Any],
        source: str | None,
        note: str | None,
        reopen: bool,
    ) -> Added[M]:
        today = self._today()
        with tracker.edit() as items:
            # Built (so validated) before anything is compared or written.
            fields |= {"id": _next_id(items, model.PREFIX), "source": source}
            new = build(model, fields | {"created": today, "updated": today})
            _key(new.text, model.TEXT)
            same = [item for item in items if item.key == new.key]
            where = f" (from {source})" if source else ""
            for item in same:
                if item.is_open:
                    self._note(item, note or f"mentioned again{where}")
                    return Added(item, "merged")
            if same and not reopen:
                return Added(same[-1], "closed")
            if same:
                item, was = same[-1], same[-1].status
                item.status = "open"
                if isinstance(item, Proposal):
                    item.decided_by = item.decided_at = None
                self._note(item, f"{was} → open: reopened{where}" + (f": {note}" if note else ""))
                return Added(item, "reopened")
            if note:
                new.log.append(DatedNote(date=today, note=note.strip()))
            items.append(new)
            return Added(new, "created")


def _key(text: str, field: str) -> str:
    key = normalize(text)
    if not key:
        fix = "write what the item is about in words"
        raise InputError(f"{text[:40]!r} has no words", field=field, fix=fix)
    return key


def _contains(needle: str) -> Callable[[TrackerItem], bool]:
    return lambda item: needle in item.searchable()


def _find(items: list[M], item_id: str, path: Path) -> M:
    for item in items:
        if item.id == item_id:
            return item
    known = ", ".join(item.id for item in items) or "none"
    raise InputError(f"no item '{item_id}'", file=path, field="id", fix=f"use one of: {known}")


def _next_id(items: list[M], prefix: str) -> str:
    numbers = [int(m.group(1)) for i in items if (m := re.fullmatch(rf"{prefix}-(\d+)", i.id))]
    return f"{prefix}-{max(numbers, default=0) + 1:03d}"


def _take(items: list[M], selects: Callable[[M], bool]) -> list[M]:
    """Remove the selected items from ``items`` in place; return them."""
    kept: list[M] = []
    gone: list[M] = []
    for item in items:
        (gone if selects(item) else kept).append(item)
    items[:] = kept
    return gone
