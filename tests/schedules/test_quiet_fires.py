"""A quiet check says nothing when its employee has nothing open, and speaks when it has."""

from __future__ import annotations

from pathlib import Path

from schedule_sim import copy_project

from framework import Settings, Staffroom
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.sessions.events import EventKind
from framework.sessions.keys import SessionKey

SCHEDULES = """\
schedules:
  morning-check:
    cron: "0 8 * * *"
    quiet: true
    start: {dm: {employee: pm, user: lead, message: "Morning check: anything that needs someone?"}}
"""


async def test_a_quiet_check_is_silent_until_something_is_open(
    settings: Settings, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    copy_project(project)
    (project / "schedules.yaml").write_text(SCHEDULES, encoding="utf-8")
    settings = settings.model_copy(update={"project_dir": project})
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff))
        try:
            await scheduler.run_now("morning-check", "nothing-open")
            await scheduler.drain()
            staff.knowledge.trackers.add_task("pm", "Send the launch checklist to legal")
            await scheduler.run_now("morning-check", "one-task")
            await scheduler.drain()
            quiet = await store.get("morning-check@now-nothing-open")
            spoke = await store.get("morning-check@now-one-task")
        finally:
            await store.close()
        log = staff.sessions.log(SessionKey.parse("dm:lead@pm")).read_all()

    assert quiet is not None and quiet.state == "quiet"
    assert spoke is not None and spoke.state == "done"
    asked = [e for e in log if e.kind == EventKind.MESSAGE and e.from_person]
    assert "none" in asked[0].text and "Send the launch checklist" in asked[1].text
    assert [e.meta["schedule"]["items"] for e in asked] == [0, 1]
    replies = [e for e in log if e.kind == EventKind.MESSAGE and not e.from_person]
    assert [bool(e.meta.get("nothing_to_report")) for e in replies] == [True, False]
