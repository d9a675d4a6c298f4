"""What the tracker files hold (layer 3): tasks, goals, reflections and proposals.

These pydantic models are the JSON format of ``trackers/{employee}/{tasks,goals,reflections}.json``
and ``trackers/proposals.json`` (see :mod:`framework.knowledge.trackers`, which reads and writes
them): every read validates, so a hand edit that breaks one names the file, line and field.
Statuses never go away: ``done``/``abandoned`` (proposals ``approved``/``rejected``) end an item.
"""

from __future__ import annotations

import calendar
from datetime import date, timedelta
from typing import ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from framework.knowledge.files import FileItem
from framework.memory.similarity import normalize
from framework.specs.knowledge_file import Interval

__all__ = [
    "LAST_FIELDS",
    "DatedNote",
    "Goal",
    "Proposal",
    "Reflection",
    "Task",
    "TrackerItem",
    "TrackerKind",
    "next_due",
]

TrackerKind = Literal["tasks", "goals", "reflections"]
"""The per-employee trackers (proposals are shared by everyone)."""
LAST_FIELDS = ("created", "updated", "source")
"""Written last in each item: bookkeeping after the item's own words."""


class DatedNote(BaseModel):
    """A dated line of an item's history."""

    model_config = ConfigDict(extra="forbid")

    date: date
    note: str = Field(min_length=1)


class TrackerItem(FileItem):
    """What every tracker item has; the subclasses are what the files hold."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    PREFIX: ClassVar[str] = "x"
    TEXT: ClassVar[str] = "id"
    LOG: ClassVar[str] = "notes"
    STATUSES: ClassVar[tuple[str, ...]] = ("open",)
    OPEN: ClassVar[tuple[str, ...]] = ("open",)

    id: str = Field(min_length=1, max_length=64)
    status: str
    created: date
    updated: date
    source: str | None = Field(default=None, description="the session it came from")

    @property
    def text(self) -> str:
        """The item's own words (what deduplication compares)."""
        return str(getattr(self, self.TEXT))

    @property
    def log(self) -> list[DatedNote]:
        """The item's dated notes (a goal's ``progress``)."""
        notes: list[DatedNote] = getattr(self, self.LOG)
        return notes

    @property
    def key(self) -> str:
        """Deduplication key: the normalised text."""
        return normalize(self.text)

    @property
    def is_open(self) -> bool:
        """Still to be acted on (not done, abandoned or decided)."""
        return self.status in self.OPEN

    def searchable(self) -> str:
        """Everything the item says, normalised (what "forget" matches)."""
        return normalize(" ".join([self.text, *(n.note for n in self.log)]))


class Task(TrackerItem):
    """A short-term action: think something through, or do it."""

    PREFIX, TEXT = "t", "task"
    STATUSES, OPEN = ("open", "waiting", "done", "abandoned"), ("open", "waiting")

    status: Literal["open", "waiting", "done", "abandoned"] = "open"
    task: str = Field(min_length=1, examples=["拿到跳出率前 10 的页面数据"])
    type: Literal["think", "act"] = "act"
    priority: Literal["high", "medium", "low"] = "medium"
    waiting_for: str | None = None
    notes: list[DatedNote] = Field(default_factory=list)


class Goal(TrackerItem):
    """A goal that takes weeks, with dated progress notes."""

    PREFIX, TEXT, LOG = "g", "goal", "progress"
    STATUSES = ("open", "done", "abandoned")

    status: Literal["open", "done", "abandoned"] = "open"
    goal: str = Field(min_length=1, examples=["内容质量打分系统"])
    target_date: date | None = None
    progress: list[DatedNote] = Field(default_factory=list)


class Reflection(TrackerItem):
    """A recurring self-review the employee set itself (it ends only by being abandoned)."""

    PREFIX, TEXT = "r", "what"
    STATUSES = ("open", "abandoned")

    status: Literal["open", "abandoned"] = "open"
    what: str = Field(min_length=1, examples=["回顾两周日志：哪些有效，哪些该做没做"])
    interval: Interval = Field(examples=["biweekly"])
    last_run: date | None = None
    notes: list[DatedNote] = Field(default_factory=list)


class Proposal(TrackerItem):
    """One employee's improvement proposal for others; a person approves or rejects it."""

    PREFIX, TEXT = "p", "recommendation"
    STATUSES = ("open", "approved", "rejected")

    status: Literal["open", "approved", "rejected"] = "open"
    by: str = Field(min_length=1)
    for_: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("for", "for_"),
        serialization_alias="for",
        description="employees or people it concerns",
    )
    observation: str = Field(min_length=1)
    recommendation: str = Field(min_length=1)
    decided_by: str | None = None
    decided_at: date | None = None
    notes: list[DatedNote] = Field(default_factory=list)

    @property
    def key(self) -> str:
        # The same advice for other people is another proposal.
        return " ".join(sorted(self.for_)) + " | " + normalize(self.recommendation)

    def searchable(self) -> str:
        return normalize(f"{self.observation} {super().searchable()}")


def next_due(reflection: Reflection) -> date:
    """When a reflection is next due: one interval after its last run (or its creation).

    ``monthly`` is a calendar month (Jan 31 -> Feb 28/29); the others are a number of days.
    """
    base = reflection.last_run or reflection.created
    if reflection.interval == "monthly":
        year, month = (base.year + 1, 1) if base.month == 12 else (base.year, base.month + 1)
        last_day = calendar.monthrange(year, month)[1]
        return base.replace(year=year, month=month, day=min(base.day, last_day))
    days = {"weekly": 7, "biweekly": 14}.get(reflection.interval)
    return base + timedelta(days=days or int(reflection.interval.removesuffix("d")))
