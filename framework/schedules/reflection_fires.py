"""The built-in fires of the seeds' self-review triggers (``trackers/<employee>/reflections.json``).

Each open trigger is due on its date (``next_due``: one interval after its last run) at the
project's ``reflection_time`` in its ``timezone`` (``staffroom.yaml``; 09:00 UTC by default).
An employee's due triggers make one fire, ``reflection-<employee>@<due>``, which runs all of
them (``Staffroom.reflect``); the run marks them, so the next is an interval later.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, time, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from framework.knowledge.tracker_items import next_due
from framework.schedules.timing import reflection_due
from framework.specs.schedules_file import ReflectionStart, ScheduleSpec, Start

if TYPE_CHECKING:
    from framework.staffroom import Staffroom

__all__ = ["REFLECTION_PREFIX", "due_reflections"]

REFLECTION_PREFIX = "reflection-"
"""Schedule names of the built-in reflection fires: ``reflection-<employee>``."""


async def due_reflections(
    staff: Staffroom, at: time, zone: ZoneInfo, now: datetime
) -> list[tuple[str, ScheduleSpec, datetime]]:
    """``(name, spec, due)`` of each employee with a trigger due by ``now`` (its latest)."""
    kb, found = staff.knowledge, []
    for employee in sorted(staff.catalog.employees):
        triggers = await asyncio.to_thread(kb.trackers.reflections, employee)
        due = [reflection_due(next_due(t), at, zone) for t in triggers if t.is_open]
        due = [d for d in due if d <= now]
        if due:
            start = Start(reflection=ReflectionStart(employee=employee))
            spec = ScheduleSpec(every=timedelta(days=1), start=start)
            found.append((f"{REFLECTION_PREFIX}{employee}", spec, max(due)))
    return found
