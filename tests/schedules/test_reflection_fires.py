"""A reflection trigger (trackers/<employee>/reflections.json) fires at the project's local
reflection time on its due day, once, through the scheduler; not before, not again."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from schedule_sim import SimClock, copy_project

from framework import Settings, Staffroom
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.sessions.events import EventKind
from framework.sessions.keys import SessionKey


async def test_a_reflection_fires_at_the_projects_local_time_once(
    settings: Settings, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    copy_project(project)
    (project / "staffroom.yaml").write_text(
        'timezone: Asia/Shanghai\nreflection_time: "08:30"\n', encoding="utf-8"
    )
    settings = settings.model_copy(update={"project_dir": project})
    zone = ZoneInfo("Asia/Shanghai")
    async with await Staffroom.open(settings=settings) as staff:
        staff.knowledge.trackers.add_reflection("pm", "What worked this week?", interval="1d")
        due_day = staff.knowledge.today() + timedelta(days=1)  # one interval after today
        at = datetime.combine(due_day, time(8, 30), zone).astimezone(UTC)
        clock = SimClock(at - timedelta(minutes=5))
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), clock=clock)
        try:
            before = await scheduler.tick()
            clock.at = at + timedelta(minutes=1)
            fired = await scheduler.tick()
            await scheduler.drain()
            clock.at = at + timedelta(minutes=30)
            again = await scheduler.tick()
            await scheduler.drain()
            fire = await store.get(f"reflection-pm@{at:%Y-%m-%dT%H:%M:%SZ}")
        finally:
            await store.close()
        log = staff.sessions.log(SessionKey.parse("dm:reflection@pm")).read_all()
        trigger = staff.knowledge.trackers.reflections("pm")[0]

    assert before.started == [] and again.started == []
    assert fired.started == [f"reflection-pm@{at:%Y-%m-%dT%H:%M:%SZ}"]  # 00:30Z = 08:30 CST
    assert fire is not None and fire.state == "done"
    briefs = [e for e in log if e.kind == EventKind.MESSAGE and e.author == "reflection"]
    assert len(briefs) == 1 and "What worked this week?" in briefs[0].text
    assert trigger.last_run == due_day
