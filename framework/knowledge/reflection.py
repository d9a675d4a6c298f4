"""Periodic self-reflection (seed 001, layer 3): due triggers start a reflection session.

Every employee that has written a journal gets one standing trigger
(:meth:`KnowledgeBase.ensure_reflection`, at ``knowledge.yaml``'s ``reflection.interval``,
biweekly by default); people may add more to ``trackers/{employee}/reflections.json``.
When one is due, :func:`reflect_due` opens the employee's reflection DM
(``dm:reflection@{employee}``), posts a brief made of its journals since the last run and its
current topic entries, lets it answer, and closes the session: the session end journals and
extracts the reflection like any other session, so what it concludes lands in trackers, topic
files and proposals. The trigger's ``last_run`` is then set; nothing is deleted.

Called by ``staffroom reflect`` and by :meth:`Staffroom.close_idle` (what a long-running
server calls now and then). The knowledge layer does not run rooms: the caller hands
:func:`reflect_due` a way to open an employee's DM (``Staffroom.dm``), which it only posts to
and closes (:class:`ReflectionChat`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Protocol

from framework.knowledge.base import KnowledgeBase
from framework.knowledge.journal import JournalDay
from framework.knowledge.topic_file import Topic
from framework.knowledge.tracker_items import Reflection
from framework.sessions.events import Event, EventKind
from framework.specs.limits import MAX_TEXT_CHARS

__all__ = ["REFLECTION_USER", "OpenDm", "ReflectionChat", "ReflectionRun", "reflect_due"]

REFLECTION_USER = "reflection"
"""The author of a reflection brief (the DM is ``dm:reflection@{employee}``)."""
_LOOKBACK_DAYS = 14  # a first run reads this far back from the trigger's creation


class ReflectionChat(Protocol):
    """What a reflection needs of the employee's DM (a :class:`~framework.runtime.room.Room`
    is one): post the brief, hear the replies, end the session."""

    @property
    def key(self) -> str:
        """The session key, ``dm:reflection@{employee}``."""
        ...

    def post(self, text: str, *, author: str, message_id: str) -> AsyncIterator[Event]:
        """Post ``text`` and yield it and every event it causes."""
        ...

    async def close(self, *, reason: str) -> list[Event]:
        """End the session (its end journals and extracts it); the events that caused."""
        ...


OpenDm = Callable[[str, str], Awaitable[ReflectionChat]]
"""``(employee, user) -> `` that employee's DM with ``user`` (``Staffroom.dm``)."""


@dataclass(frozen=True, slots=True)
class ReflectionRun:
    """One reflection session: the trigger, the journal days it read, what was said."""

    employee: str
    reflection_id: str
    session: str
    days_read: int
    replies: list[str] = field(default_factory=list)
    knowledge: dict[str, object] | None = None
    """The ``knowledge`` event of its session end (extraction and routing), if any."""
    events: list[Event] = field(default_factory=list)
    """Everything the session logged: the brief, the replies, its end."""


async def reflect_due(
    kb: KnowledgeBase, open_dm: OpenDm, employees: Iterable[str], *, today: date | None = None
) -> list[ReflectionRun]:
    """Run every due reflection of ``employees``, each in its DM opened by ``open_dm``."""
    day = today or kb.today()
    runs: list[ReflectionRun] = []
    for name in employees:
        for trigger in await asyncio.to_thread(kb.trackers.due, name, day):
            runs.append(await _reflect(kb, open_dm, name, trigger, day))
    return runs


async def _reflect(
    kb: KnowledgeBase, open_dm: OpenDm, employee: str, trigger: Reflection, day: date
) -> ReflectionRun:
    # A first run reads from before the trigger existed (the journals that led to it).
    since = trigger.last_run or min(trigger.created, day) - timedelta(days=_LOOKBACK_DAYS)
    journals = await asyncio.to_thread(kb.journal.entries_since, employee, since)
    topics = await asyncio.to_thread(kb.topics(employee).list)
    brief = _brief(trigger, since, journals, topics)
    room = await open_dm(employee, REFLECTION_USER)
    message_id = f"reflect-{employee}-{trigger.id}-{day.isoformat()}"  # once per trigger a day
    said = [e async for e in room.post(brief, author=REFLECTION_USER, message_id=message_id)]
    ended = await room.close(reason="reflection")
    await asyncio.to_thread(kb.trackers.mark_run, employee, trigger.id, day=day)
    replies = [str(e.content) for e in said if e.kind == EventKind.MESSAGE and e.author == employee]
    return ReflectionRun(
        employee,
        trigger.id,
        room.key,
        days_read=len([d for d in journals if d.blocks]),
        replies=replies,
        knowledge=_knowledge(ended),
        events=[*said, *ended],
    )


def _brief(
    trigger: Reflection, since: date, journals: list[JournalDay], topics: list[Topic]
) -> str:
    head = [f"定期反思 / Reflection ({trigger.interval}): {trigger.what}", ""]
    head.append(f"日志 / Journals since {since.isoformat()}:")
    notes = [f"- {j.day.isoformat()} {e.kind}: {e.text}" for j in journals for e in j.entries]
    known = [f"- {t.category}/{t.slug}: {entry}" for t in topics for entry in t.entries]
    tail = [
        "",
        "请总结：哪些有效、哪些该做没做、下一步改进（用 改进：/ 决定：/ 任务： 开头的行）。",
    ]

    def text() -> str:
        body = notes or ["- (no journal entries)"]
        return "\n".join([*head, *body, "", "知识 / What you know now:", *known, *tail])

    # Over the message cap: the oldest journal lines go first, then the oldest topics.
    while len(text()) > MAX_TEXT_CHARS and (notes or known):
        (notes or known).pop(0)
    return text()


def _knowledge(events: list[Event]) -> dict[str, object] | None:
    for event in events:
        if event.kind == EventKind.KNOWLEDGE and isinstance(event.content, dict):
            return dict(event.content)
    return None
