"""Scheduled fires delivered into another room's log (``deliver: {room}``), starting no run.

A project with a team room (engineer, lead) and a DM check of pm's: the check's replies, or
its failure notice, land in the team room's log once, the room runs nothing, and its
employee reads them in a later turn. Employees think with the offline simulator or a
scripted model (test doubles); both backends (``STAFFROOM_TEST_BACKEND=postgres``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from langchain_core.messages import HumanMessage
from schedule_sim import SimClock, copy_project

from framework import Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.schedules.fire_store import Fire, FireStore, open_fire_store
from framework.schedules.runner import FireResult, Runner
from framework.schedules.scheduler import Scheduler
from framework.serving.gateway import Gateway
from framework.sessions.events import Event, EventKind
from framework.specs.model_spec import ModelSpec
from framework.specs.schedule_delivery import delivery_problems
from framework.specs.schedules_file import load_schedules

TEAM = """\
id: team
title: Team
participants: [engineer]
humans: [lead]
announcement: The team's room.
settings:
  max_turns: 1
"""
CHECK_INTO_TEAM = """\
timezone: Europe/Berlin
schedules:
  pm-check:
    cron: "30 9 * * mon-fri"
    start: {dm: {employee: pm, user: lead, message: "Stand-up: what is next?"}}
    deliver: {room: team}
"""
NOW = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
REPORT = "Shipped the login page; next: billing."


@dataclass
class Project:
    settings: Settings
    models: dict[str, ScriptedChatModel] = field(default_factory=dict)
    """Employee id -> its scripted model (the others think with the simulator)."""

    def factory(self, spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return self.models.get(who)


def _project(settings: Settings, tmp_path: Path, schedules: str, **update: object) -> Project:
    project = tmp_path / "project"
    copy_project(project)
    (project / "scenarios" / "team.yaml").write_text(TEAM, encoding="utf-8")
    (project / "schedules.yaml").write_text(schedules, encoding="utf-8")
    update = {"project_dir": project, "language": "en", **update}
    return Project(settings.model_copy(update=update))


@dataclass
class Open:
    staff: Staffroom
    scheduler: Scheduler
    runner: Runner
    store: FireStore
    results: dict[str, FireResult]


@asynccontextmanager
async def _opened(project: Project, gateway: bool = False) -> AsyncIterator[Open]:
    results: dict[str, FireResult] = {}

    def on_result(fire: Fire, result: FireResult) -> None:
        results[fire.fire_id] = result

    async with await Staffroom.open(
        settings=project.settings, model_factory=project.factory
    ) as staff:
        gate = await Gateway.open(staff) if gateway else None
        store = await open_fire_store(project.settings.data_dir, await staff.stores.database())
        runner = Runner(staff, gate)
        scheduler = Scheduler(staff, store, runner, clock=SimClock(NOW), on_result=on_result)
        try:
            yield Open(staff, scheduler, runner, store, results)
        finally:
            await scheduler.drain()
            if gate is not None:
                await gate.close()
            await store.close()


async def _team(staff: Staffroom) -> list[Event]:
    """Open the team room (it enters; no one speaks) and return its log."""
    room = await staff.room("team", "team")
    [e async for e in room.start()]
    return room.history()


async def _fire(opened: Open, schedule: str, token: str) -> tuple[Fire, FireResult]:
    fire = await opened.scheduler.run_now(schedule, token)
    assert fire is not None
    await opened.scheduler.drain()
    return fire, opened.results[fire.fire_id]


def _delivered(events: list[Event]) -> list[Event]:
    return [e for e in events if "delivered" in e.meta]


async def test_a_dm_check_is_delivered_into_the_team_room_once_and_runs_nothing_there(
    settings: Settings, tmp_path: Path
) -> None:
    project = _project(settings, tmp_path, CHECK_INTO_TEAM)
    project.models["pm"] = ScriptedChatModel(replies=[REPORT])
    async with _opened(project) as opened:
        before = await _team(opened.staff)
        team = await opened.staff.session("room:team")
        turns = (await team.status()).turns
        fire, result = await _fire(opened, "pm-check", "monday")
        after = team.history()
        # The fire run again (its scheduler died before recording it): nothing twice.
        spec = opened.scheduler.schedules().schedules["pm-check"]
        again = await opened.runner.run("pm-check", spec, fire, opened.scheduler.zone(spec))
        assert await opened.scheduler.run_now("pm-check", "monday") is None  # one per id
        status = await team.status()
        dm = (await opened.staff.session("dm:lead@pm")).history()

    assert result.state == "done" and "delivered into room:team" in result.detail
    assert again.state == "done"
    assert team.history() == after  # not one line more
    new = after[len(before) :]
    [reply] = [e for e in dm if e.kind == EventKind.MESSAGE and e.author == "pm"]
    assert [(e.kind, e.author, e.text) for e in new] == [(EventKind.MESSAGE, "pm", REPORT)]
    assert new[0].meta["delivered"] == {
        "schedule": "pm-check",
        "fire": fire.fire_id,
        "from": "dm:lead@pm",
        "event": reply.id,
        "name": new[0].meta["delivered"]["name"],
    }
    assert not new[0].from_person  # never taken for a person's message, never answered
    assert status.turns == turns and status.stop_reason is None  # no run started there


async def test_the_team_room_s_employee_reads_the_delivered_report_in_a_later_turn(
    settings: Settings, tmp_path: Path
) -> None:
    project = _project(settings, tmp_path, CHECK_INTO_TEAM)
    project.models["pm"] = ScriptedChatModel(replies=[REPORT])
    engineer = project.models["engineer"] = ScriptedChatModel(replies=["Billing it is."])
    async with _opened(project) as opened:
        await _team(opened.staff)
        await _fire(opened, "pm-check", "monday")
        team = await opened.staff.session("room:team")
        said = [e async for e in team.post("@engineer what did pm report?", author="lead")]

    assert [e.text for e in said if e.author == "engineer"] == ["Billing it is."]
    [prompt] = engineer.calls
    seen = [m.content for m in prompt if isinstance(m, HumanMessage)]
    assert f"pm (delivered by schedule pm-check from dm:lead@pm): {REPORT}" in seen


FAILING_CHECK = CHECK_INTO_TEAM.replace("    deliver:", "    retries: 0\n    deliver:")


async def test_a_failed_check_delivers_one_failure_notice(
    settings: Settings, tmp_path: Path
) -> None:
    project = _project(settings, tmp_path, FAILING_CHECK, model_retries=0)
    project.models["pm"] = ScriptedChatModel(replies=[TimeoutError("slow")])
    async with _opened(project) as opened:
        before = await _team(opened.staff)
        fire, result = await _fire(opened, "pm-check", "monday")
        spec = opened.scheduler.schedules().schedules["pm-check"]
        zone = opened.scheduler.zone(spec)
        # Told again (a scheduler restarted after telling): the notice is there once.
        await opened.runner.notify_failure("pm-check", spec, fire, zone, "slow", 1)
        team = (await opened.staff.session("room:team")).history()

    assert result.state == "failed"
    [notice] = team[len(before) :]
    assert (notice.kind, notice.author) == (EventKind.MESSAGE, "system")
    assert notice.text.startswith("Scheduled pm-check (due 2026-03-02 09:30 CET) failed after 1")
    assert notice.meta["delivered"] == {"schedule": "pm-check", "fire": fire.fire_id}


QUIET_CHECK = CHECK_INTO_TEAM.replace("    deliver:", "    quiet: true\n    deliver:")


async def test_a_quiet_check_delivers_nothing(settings: Settings, tmp_path: Path) -> None:
    project = _project(settings, tmp_path, QUIET_CHECK)  # pm has nothing open: the simulator
    async with _opened(project) as opened:
        before = await _team(opened.staff)
        _, result = await _fire(opened, "pm-check", "monday")
        team = (await opened.staff.session("room:team")).history()

    assert result.state == "quiet"
    assert team == before


INTO_NOWHERE = CHECK_INTO_TEAM.replace("{room: team}", "{room: nowhere}")


async def test_an_unknown_target_room_fails_the_fire_before_it_runs_saying_how_to_fix_it(
    settings: Settings, tmp_path: Path
) -> None:
    project = _project(settings, tmp_path, INTO_NOWHERE)
    pm = project.models["pm"] = ScriptedChatModel(replies=[REPORT])
    async with _opened(project) as opened:
        await _team(opened.staff)
        _, result = await _fire(opened, "pm-check", "monday")
        sessions = [str(k) for k in opened.staff.sessions.list_sessions()]

    assert result.state == "failed" and result.session is None
    assert "schedules.yaml:6" in result.detail
    assert "schedules.pm-check.deliver.room" in result.detail
    assert "room 'nowhere', which does not exist" in result.detail
    assert "--room nowhere" in result.detail and "rooms: team" in result.detail
    assert pm.calls == [] and sessions == ["room:team"]  # the check never ran


async def test_with_a_gateway_its_listeners_hear_the_delivered_report(
    settings: Settings, tmp_path: Path
) -> None:
    project = _project(settings, tmp_path, CHECK_INTO_TEAM)
    project.models["pm"] = ScriptedChatModel(replies=[REPORT])
    heard: list[tuple[str, Event]] = []

    async def listen(key: str, event: Event) -> None:
        heard.append((key, event))

    async with _opened(project, gateway=True) as opened:
        assert opened.runner.gateway is not None
        opened.runner.gateway.add_listener(listen)
        await _team(opened.staff)
        await _fire(opened, "pm-check", "monday")
    # The gateway's close delivered what its listeners wait for.
    into_team = [(e.author, e.text) for key, e in heard if key == "room:team"]
    assert into_team == [("pm", REPORT)]


OWN_SESSION = """\
schedules:
  self-check:
    every: 1h
    start: {dm: {employee: pm, user: lead, message: hi}}
    deliver: {dm: {employee: pm, user: lead}}
  into-dm:
    every: 1h
    start: {room: {scenario: team, message: hi}}
    deliver: {dm: {employee: pm, user: lead}}
"""


def test_delivering_into_the_session_the_schedule_starts_is_refused(
    settings: Settings, tmp_path: Path
) -> None:
    project = _project(settings, tmp_path, OWN_SESSION)
    problems = delivery_problems(load_schedules(project.settings.project_dir))

    assert [(p.field, p.line) for p in problems] == [("schedules.self-check.deliver.dm", 5)]
    assert "its replies are there already" in problems[0].message
