"""Scheduled fires delivered into Slack and Feishu chats through the offline platform fakes.

A scheduler on a simulated clock runs over a gateway and the adapters a server would run
(``AdapterRoutes(config).start()``); the fake platform (tests/fake_platform.py) records what
the adapters send. Employees think with the offline simulator, or a scripted model that
times out (test doubles); nothing leaves the machine.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fake_platform import Call, FakePlatform
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
from framework.surfaces.adapters.http import AdapterRoutes, AdaptersConfig
from framework.surfaces.server.app import build_app_from_project
from framework.surfaces.server.config import ServerConfig

STANDUP = """\
id: standup
title: Stand-up
participants: [pm, engineer]
humans: [lead]
announcement: The team's daily stand-up.
settings:
  max_turns: 2
"""
CHECK = """\
id: check
title: Check
participants: [pm]
humans: [lead]
announcement: A quick check.
settings:
  max_turns: 1
"""
# Monday 2026-03-02, 09:30 in Berlin (CET) is 08:30Z.
DUE = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)


@pytest.fixture
def fake() -> Iterator[FakePlatform]:
    with FakePlatform() as platform:
        yield platform


def _project(tmp_path: Path, schedules: str) -> Path:
    project = tmp_path / "project"
    copy_project(project)
    (project / "scenarios" / "standup.yaml").write_text(STANDUP, encoding="utf-8")
    (project / "scenarios" / "check.yaml").write_text(CHECK, encoding="utf-8")
    (project / "schedules.yaml").write_text(schedules, encoding="utf-8")
    return project


def _config(fake: FakePlatform) -> AdaptersConfig:
    groups = {
        "C0STANDUP": {"scenario": "standup", "mode": "thread"},
        "C0TEAM": {"scenario": "standup"},
        "C0CHECK": {"scenario": "check"},
        "C0ARTICLE": {"scenario": "tech-article"},
    }
    slack = {"signing_secret": "s" * 32, "bot_token": "xoxb-shared", "bot_id": "B0SHARED"}
    slack |= {"api_url": f"{fake.url}/api/", "groups": groups}
    feishu = {
        "app_id": "cli_shared",
        "app_secret": "secret-shared",
        "verification_token": "v-token",
        "domain": fake.url,
        "groups": {"oc_team": {"scenario": "standup"}},
    }
    return AdaptersConfig.model_validate({"slack": slack, "feishu": feishu})


@dataclass
class Ran:
    """What the fires did: their results, and each session's log."""

    results: dict[str, FireResult]
    logs: dict[str, list[Event]]

    def replies(self, key: str) -> list[Event]:
        """The employees' messages of session ``key``."""
        return [e for e in self.logs[key] if e.kind == EventKind.MESSAGE and not e.from_person]


@asynccontextmanager
async def _scheduler(
    settings: Settings, fake: FakePlatform, model: ScriptedChatModel | None = None
) -> AsyncIterator[tuple[Scheduler, Gateway, dict[str, FireResult]]]:
    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model

    results: dict[str, FireResult] = {}

    def on_result(fire: Fire, result: FireResult) -> None:
        results[fire.schedule] = result

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        gateway = await Gateway.open(staff)
        routes = AdapterRoutes(_config(fake))
        routes.bind(gateway, 1 << 20)
        store: FireStore = await open_fire_store(settings.data_dir, await staff.stores.database())
        runner = Runner(staff, gateway, routes.start())
        clock = SimClock(DUE - timedelta(minutes=1))
        scheduler = Scheduler(staff, store, runner, clock=clock, on_result=on_result)
        try:
            yield scheduler, gateway, results
        finally:
            await scheduler.drain()
            await routes.stop()  # every reply queued for the platform is sent
            await gateway.close()
            await store.close()


async def _fire_once(
    settings: Settings, fake: FakePlatform, model: ScriptedChatModel | None = None
) -> Ran:
    """Tick before and after the due time; the fired sessions' logs once all is sent."""
    async with _scheduler(settings, fake, model) as (scheduler, _, results):
        await scheduler.tick()  # first seen: from now on
        assert isinstance(scheduler.clock, SimClock)
        scheduler.clock.at = DUE + timedelta(minutes=1)
        report = await scheduler.tick()
        assert report.started, report
        await scheduler.drain()
    keys = [r.session for r in results.values() if r.session]
    async with await Staffroom.open(settings=settings) as staff:
        logs = {key: (await staff.session(key)).history() for key in keys}
    return Ran(results, logs)


def _posted(fake: FakePlatform) -> list[Call]:
    return fake.sent("/api/chat.postMessage")


def _with(settings: Settings, tmp_path: Path, schedules: str, **update: Any) -> Settings:
    return settings.model_copy(
        update={"project_dir": _project(tmp_path, schedules), "language": "en", **update}
    )


STANDUP_IN_THREADS = """\
timezone: Europe/Berlin
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    start:
      room: {scenario: standup, message: "Stand-up: @pm @engineer what is next?"}
    deliver: {adapter: slack, chat: C0STANDUP}
"""


async def test_a_stand_up_opens_a_slack_thread_and_posts_each_reply_into_it_once(
    settings: Settings, tmp_path: Path, fake: FakePlatform
) -> None:
    ran = await _fire_once(_with(settings, tmp_path, STANDUP_IN_THREADS), fake)

    result = ran.results["standup"]
    assert result.state == "done", result.detail
    posted = _posted(fake)
    root, replies = posted[0], posted[1:]
    # The fire's message opens the thread (sent by the shared app), in the channel.
    assert root.body["channel"] == "C0STANDUP" and "thread_ts" not in root.body
    assert root.body["text"].startswith("Stand-up:")
    ts = root.answer["ts"] if root.answer else ""
    # The room is the thread's: a person answering in it reaches the same room.
    assert result.session == f"room:slack-t0team1-c0standup-{ts}"
    said = ran.replies(result.session)
    assert said, "the stand-up was answered"
    assert [(c.body["channel"], c.body.get("thread_ts")) for c in replies] == [
        ("C0STANDUP", ts)
    ] * len(said)
    assert sorted(c.body["text"] for c in replies) == sorted(e.text for e in said)
    assert len(fake.sent("/api/auth.test")) == 1  # the workspace id, asked once


STANDUP_IN_A_FEISHU_THREAD = """\
timezone: Europe/Berlin
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    start:
      room: {scenario: standup, message: "Stand-up: @pm what is next?"}
    deliver: {adapter: feishu, chat: oc_team, thread: om_root1}
"""


async def test_a_stand_up_posts_into_the_given_feishu_thread(
    settings: Settings, tmp_path: Path, fake: FakePlatform
) -> None:
    ran = await _fire_once(_with(settings, tmp_path, STANDUP_IN_A_FEISHU_THREAD), fake)

    result = ran.results["standup"]
    assert result.state == "done", result.detail
    assert result.session == "room:feishu-oc_team"  # the group's room (mode group)
    said = ran.replies(result.session)
    sent = fake.sent("/open-apis/im/v1/messages")
    assert said and len(sent) == len(said)
    assert {c.path for c in sent} == {"/open-apis/im/v1/messages/om_root1/reply"}
    # Sent by the shared app, each reply once, its employee's name before it.
    texts = sorted(json.loads(c.body["content"])["text"].split("] ", 1)[1] for c in sent)
    assert texts == sorted(e.text for e in said)


QUIET_CHECK = """\
timezone: Europe/Berlin
schedules:
  check:
    cron: "30 9 * * mon-fri"
    quiet: true
    start:
      room: {scenario: check, message: "@pm anything that needs someone?"}
    deliver: {adapter: slack, chat: C0CHECK, thread: "1700000000.000100"}
"""


async def test_a_quiet_fire_sends_nothing(
    settings: Settings, tmp_path: Path, fake: FakePlatform
) -> None:
    ran = await _fire_once(_with(settings, tmp_path, QUIET_CHECK), fake)

    result = ran.results["check"]
    assert result.state == "quiet", result.detail
    assert result.session is not None and ran.replies(result.session)  # said, to the log
    assert _posted(fake) == []


FAILING = """\
timezone: Europe/Berlin
schedules:
  article:
    cron: "30 9 * * mon-fri"
    retries: 1
    start: {room: {scenario: tech-article}}
    deliver: {adapter: slack, chat: C0ARTICLE, thread: "1700000000.000100"}
"""


async def test_a_failing_fire_sends_one_failure_notice_after_its_retries(
    settings: Settings, tmp_path: Path, fake: FakePlatform
) -> None:
    # An SOP room: its first step, and the retry of that step, time out.
    model = ScriptedChatModel(replies=[TimeoutError("slow"), TimeoutError("slower")])
    settings = _with(settings, tmp_path, FAILING, model_retries=0)
    ran = await _fire_once(settings, fake, model)

    assert ran.results["article"].state == "failed"
    assert len(model.calls) == 2  # the run and its one retry
    posted = _posted(fake)
    assert len(posted) == 1, [c.body for c in posted]
    notice = posted[0].body
    assert notice["channel"] == "C0ARTICLE" and notice["thread_ts"] == "1700000000.000100"
    assert notice["username"] == "Staffroom"
    assert notice["text"].startswith(
        "Scheduled article (due 2026-03-02 09:30 CET) failed after 2 attempt(s):"
    )


WRONG_SCENARIO = """\
timezone: Europe/Berlin
schedules:
  check:
    cron: "30 9 * * mon-fri"
    start:
      room: {scenario: check, message: "@pm anything?"}
    deliver: {adapter: slack, chat: C0TEAM}
"""


async def test_a_room_of_another_scenario_than_the_chat_s_is_refused_and_said_there(
    settings: Settings, tmp_path: Path, fake: FakePlatform
) -> None:
    ran = await _fire_once(_with(settings, tmp_path, WRONG_SCENARIO), fake)

    result = ran.results["check"]
    assert result.state == "failed" and result.session is None
    assert "schedules.yaml:6" in result.detail
    assert "schedules.check.start.room.scenario" in result.detail
    assert "runs scenario 'standup'" in result.detail and "scenario: standup" in result.detail
    [notice] = _posted(fake)  # the chat hears why nothing came
    assert notice.body["channel"] == "C0TEAM" and "runs scenario 'standup'" in notice.body["text"]


async def test_without_a_server_a_platform_delivery_fails_saying_why(
    settings: Settings, tmp_path: Path
) -> None:
    settings = _with(settings, tmp_path, STANDUP_IN_THREADS)
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        scheduler = Scheduler(staff, store, Runner(staff), clock=SimClock(DUE))
        try:
            fire = await scheduler.run_now("standup")
            await scheduler.drain()
            assert fire is not None
            [done] = [f for f in await store.history() if f.fire_id == fire.fire_id]
        finally:
            await store.close()
    assert done.state == "failed"
    assert "only a server reaches" in (done.detail or "")


REFUSED = """\
schedules:
  into-room:
    every: 1h
    start: {room: {scenario: check, message: hi}}
    deliver: {room: standup}
  into-itself:
    every: 1h
    start: {room: {scenario: check, room: standup, message: hi}}
    deliver: {room: standup}
  dm-to-chat:
    every: 1h
    start: {dm: {employee: pm, message: hi}}
    deliver: {adapter: slack, chat: C0TEAM}
"""


def test_deliveries_that_cannot_be_carried_out_are_refused_with_file_and_line(
    tmp_path: Path,
) -> None:
    problems = delivery_problems(load_schedules(_project(tmp_path, REFUSED)))

    # Into another room is carried out (tests/schedules/test_schedule_notice_delivery.py).
    assert [(p.field, p.line) for p in problems] == [
        ("schedules.into-itself.deliver.room", 9),
        ("schedules.dm-to-chat.deliver.adapter", 13),
    ]
    assert "there already" in problems[0].message and "a DM's replies" in problems[1].message


async def test_the_server_s_scheduler_delivers_through_its_adapters(
    settings: Settings, tmp_path: Path, fake: FakePlatform
) -> None:
    settings = _with(settings, tmp_path, STANDUP_IN_THREADS)
    app = build_app_from_project(
        settings, ServerConfig(no_auth=True), adapters=AdapterRoutes(_config(fake))
    )
    async with app.router.lifespan_context(app):
        scheduler = app.state.scheduler.scheduler
        assert await scheduler.run_now("standup") is not None
        await scheduler.drain()
    # The lifespan's end sent every queued reply: the root and its thread's replies.
    posted = _posted(fake)
    ts = posted[0].answer["ts"] if posted[0].answer else ""
    assert len(posted) > 1 and {c.body.get("thread_ts") for c in posted[1:]} == {ts}
