"""What a quiet fire asks its employees to check: their open tracker items.

A quiet check should stay silent only when nothing needs anyone; the employee needs the
evidence to judge that. The fire's message lists the open tasks and proposals of the room's
employees (``trackers/``), and the count goes in the message's ``meta.schedule.items``, so the
offline simulator (a test double) answers "nothing to report" only when the list is empty,
and a real model sees the same list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from framework.knowledge.base import KnowledgeBase
from framework.phrases import Language, Phrase

__all__ = ["quiet_digest"]

ITEMS = Phrase(en="Open items to check:", zh="待检查的事项：")
NO_ITEMS = Phrase(en="Open items to check: none.", zh="待检查的事项：无。")
TASK = Phrase(en="- {who}, task {id}: {text}", zh="- {who}，任务 {id}：{text}")
WAITING = Phrase(en=" (waiting for {whom})", zh="（等待 {whom}）")
PROPOSAL = Phrase(en="- {who}, proposal {id}: {text}", zh="- {who}，建议 {id}：{text}")
MORE = Phrase(en="- … and {n} more", zh="- ……另有 {n} 项")
_SHOWN = 20


async def quiet_digest(
    kb: KnowledgeBase, employees: Sequence[str], language: Language
) -> tuple[str, int]:
    """The list a quiet fire's message carries, and how many items it names."""
    lines: list[str] = []
    for who in employees:
        items = await asyncio.to_thread(kb.trackers.open_items, who)
        for task in items.tasks:
            line = TASK(language, who=who, id=task.id, text=task.task)
            if task.waiting_for:
                line += WAITING(language, whom=task.waiting_for)
            lines.append(line)
        lines += [
            PROPOSAL(language, who=who, id=p.id, text=p.recommendation) for p in items.proposals
        ]
    if not lines:
        return NO_ITEMS(language), 0
    shown = lines[:_SHOWN]
    if len(lines) > _SHOWN:
        shown.append(MORE(language, n=len(lines) - _SHOWN))
    return "\n".join([ITEMS(language), *shown]), len(lines)
