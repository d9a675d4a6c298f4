"""``/api/schedules`` in this process (httpx.ASGITransport), on a project with schedules.yaml.

With the server's scheduler (the app's lifespan runs it): the list, a schedule's history,
run-now twice under one id starting one run (one message in the DM), pause and resume. Without
one (``--no-schedules``): the list, pause and history from the file and the ledger, run-now
refused with a fix. Tokens: 401 without one, 403 without the ``schedule`` operation. A broken
schedules.yaml is reported in the list, not a 500, and no answer names the server's folders.
"""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from backend import backend_database
from paths import ROOT

from framework import Settings, Staffroom
from framework.schedules.in_server import RunningScheduler
from framework.schedules.timing import fire_id
from framework.serving.gateway import Gateway
from framework.sessions.events import EventKind
from framework.sessions.keys import SessionKey
from framework.surfaces.server.app import create_app
from framework.surfaces.server.config import load_config

SCHEDULES = """\
timezone: Europe/Berlin
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    start: {dm: {employee: pm, user: lead, message: "Stand-up: what is next?"}}
  check:
    every: 6h
    quiet: true
    start: {dm: {employee: designer, user: lead, message: "Anything that needs someone?"}}
"""
BROKEN = 'schedules:\n  standup:\n    cron: "99 9 * * *"\n    start: {dm: {employee: pm}}\n'

OPERATOR = "operator-secret-0123456789abcdef"
READER = "reader-secret-0123456789abcdef"
POSTER = "poster-secret-0123456789abcdef"
CONFIG = f"""\
tokens:
  - {{name: operator, secret: {OPERATOR}, operations: [read, schedule], rate_limit: 0,
      sessions: ["room:nothing-*"]}}
  - {{name: reader, secret: {READER}, operations: [read], rate_limit: 0}}
  - {{name: poster, secret: {POSTER}, operations: [read, open, post], rate_limit: 0}}
"""


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@dataclass
class Served:
    api: httpx.AsyncClient
    staff: Staffroom
    project: Path
    scheduler: RunningScheduler | None


@asynccontextmanager
async def served(tmp_path: Path, *, scheduler: bool) -> AsyncIterator[Served]:
    """The app over a project with ``SCHEDULES``; its lifespan (and so its scheduler) runs
    when ``scheduler``, else it serves as ``--no-schedules`` would."""
    project = tmp_path / "project"
    if not project.exists():
        for folder in ("agents", "scenarios", "sop_library"):
            shutil.copytree(ROOT / folder, project / folder)
        (project / "schedules.yaml").write_text(SCHEDULES, encoding="utf-8")
    path = tmp_path / "server.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=project,
        allow_network=False,
        database=backend_database(),
    )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        app = create_app(gateway, load_config(path, environ={}))
        transport = httpx.ASGITransport(app=app)
        async with AsyncExitStack() as stack:
            api = await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://test")
            )
            running = None
            if scheduler:
                await stack.enter_async_context(app.router.lifespan_context(app))
                running = app.state.scheduler
                await running.scheduler.tick()  # a heartbeat, whatever the background did yet
            yield Served(api, staff, project, running)
        await gateway.close()


async def test_the_list_shows_each_schedule_its_next_fire_and_the_heartbeat(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, scheduler=True) as s:
        assert s.scheduler is not None
        store = s.scheduler.scheduler.store
        for day in (2, 3):  # what a scheduler records for due times it was down for
            due = datetime(2026, 3, day, 8, 30, tzinfo=UTC)
            await store.record_missed(
                fire_id("standup", due), "standup", due, "missed", now=due, detail="missed"
            )
        answer = await s.api.get("/api/schedules", headers=bearer(READER))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    shown = {item["name"]: item for item in body["schedules"]}
    assert list(shown) == ["standup", "check"]
    standup = shown["standup"]
    assert standup["when"] == "30 9 * * mon-fri" and standup["zone"] == "Europe/Berlin"
    assert standup["enabled"] and not standup["paused"] and standup["missed"] == 2
    assert [(f["fire_id"], f["state"]) for f in standup["last_fires"]] == [
        ("standup@2026-03-03T08:30:00Z", "missed"),
        ("standup@2026-03-02T08:30:00Z", "missed"),
    ]
    assert standup["last_fires"][0]["due"]["local"] == "2026-03-03T09:30:00+01:00"
    # 09:30 on Berlin's clock, whatever the offset of the day.
    assert standup["next_fire"]["local"][11:19] == "09:30:00"
    assert standup["next_fire"]["utc"].endswith("Z")
    assert shown["check"]["every"] == "6h"
    assert body["file_error"] is None
    assert body["scheduler"]["runs_here"] and body["scheduler"]["health"] in ("ok", "starting")
    beat = body["scheduler"]["heartbeats"][0]
    assert not beat["stalled"] and beat["age_s"] < 60


async def test_run_now_twice_with_one_key_starts_one_run(tmp_path: Path) -> None:
    async with served(tmp_path, scheduler=True) as s:
        first = await s.api.post(
            "/api/schedules/standup/run-now",
            headers={**bearer(OPERATOR), "Idempotency-Key": "retry-1"},
        )
        again = await s.api.post(
            "/api/schedules/standup/run-now", headers=bearer(OPERATOR), json={"id": "retry-1"}
        )
        assert s.scheduler is not None
        await s.scheduler.scheduler.drain()
        history = await s.api.get("/api/schedules/standup/history", headers=bearer(READER))
        listed = await s.api.get("/api/schedules", headers=bearer(READER))
        log = s.staff.sessions.log(SessionKey.parse("dm:lead@pm")).read_all()

    assert first.status_code == 202, first.text
    assert first.json()["fire"]["fire_id"] == "standup@now-retry-1"
    assert not first.json()["duplicate"]
    assert again.status_code == 200, again.text
    assert again.json()["duplicate"] and again.headers["Idempotent-Replayed"] == "true"
    assert again.json()["fire"]["fire_id"] == "standup@now-retry-1"
    assert "ran already" in again.json()["message"]

    fires = history.json()["fires"]
    assert [(f["fire_id"], f["kind"], f["state"]) for f in fires] == [
        ("standup@now-retry-1", "run_now", "done")
    ]
    assert fires[0]["session"] == "dm:lead@pm" and fires[0]["attempts"] == 1
    last = {i["name"]: i for i in listed.json()["schedules"]}["standup"]["last_fires"]
    assert [f["state"] for f in last] == ["done"]
    posted = [
        e for e in log if e.kind == EventKind.MESSAGE and e.from_person and "schedule" in e.meta
    ]
    assert [e.meta["schedule"]["fire"] for e in posted] == ["standup@now-retry-1"]


async def test_a_key_in_the_header_and_another_in_the_body_is_refused(tmp_path: Path) -> None:
    async with served(tmp_path, scheduler=True) as s:
        answer = await s.api.post(
            "/api/schedules/standup/run-now",
            headers={**bearer(OPERATOR), "Idempotency-Key": "a"},
            json={"id": "b"},
        )
        extra = await s.api.post(
            "/api/schedules/standup/run-now", headers=bearer(OPERATOR), json={"when": "now"}
        )
        history = await s.api.get("/api/schedules/standup/history", headers=bearer(READER))
    assert answer.status_code == 400 and answer.json()["error"]["field"] == "id"
    assert extra.status_code == 422
    assert history.json()["fires"] == []


async def test_pause_and_resume(tmp_path: Path) -> None:
    async with served(tmp_path, scheduler=True) as s:
        paused = await s.api.post("/api/schedules/standup/pause", headers=bearer(OPERATOR))
        listed = await s.api.get("/api/schedules", headers=bearer(READER))
        resumed = await s.api.post("/api/schedules/standup/resume", headers=bearer(OPERATOR))
        assert s.scheduler is not None
        still = await s.scheduler.scheduler.store.paused()
    assert paused.status_code == 200, paused.text
    assert paused.json()["paused"] and paused.json()["next_fire"] is None
    assert paused.json()["paused_since"]["utc"].endswith("Z")
    shown = {i["name"]: i for i in listed.json()["schedules"]}
    assert shown["standup"]["paused"] and not shown["check"]["paused"]
    assert resumed.status_code == 200 and not resumed.json()["paused"]
    assert resumed.json()["next_fire"] is not None
    assert still == {}


async def test_tokens_need_the_schedule_operation_and_unknown_schedules_are_404(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, scheduler=True) as s:
        control = [
            await s.api.post(f"/api/schedules/standup/{action}", headers=bearer(token))
            for action in ("run-now", "pause", "resume")
            for token in (READER, POSTER)
        ]
        anonymous = [
            await s.api.get("/api/schedules"),
            await s.api.post("/api/schedules/standup/run-now", json={"id": "x"}),
        ]
        unknown = [
            await s.api.post(f"/api/schedules/nope/{action}", headers=bearer(OPERATOR))
            for action in ("run-now", "pause", "resume")
        ]
        unknown.append(await s.api.get("/api/schedules/nope/history", headers=bearer(READER)))
        bad_name = await s.api.post("/api/schedules/..%2Fx/pause", headers=bearer(OPERATOR))
        assert s.scheduler is not None
        fires = await s.scheduler.scheduler.store.history(limit=10)
    for answer in control:
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"]["field"] == "operations"
        assert "'schedule'" in answer.json()["error"]["fix"]
    assert [a.status_code for a in anonymous] == [401, 401]
    for answer in unknown:
        assert answer.status_code == 404, answer.text
        error = answer.json()["error"]
        assert error["type"] == "unknown_name" and "GET /api/schedules" in error["fix"]
    assert bad_name.status_code in (404, 422) and bad_name.json()["error"]["message"]
    assert fires == [], "a refused request started nothing"


async def test_a_broken_schedules_file_is_reported_not_a_server_error(tmp_path: Path) -> None:
    async with served(tmp_path, scheduler=True) as s:
        (s.project / "schedules.yaml").write_text(BROKEN, encoding="utf-8")
        answer = await s.api.get("/api/schedules", headers=bearer(READER))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["file_error"] and "schedules.yaml" in body["file_error"]
    # The scheduler keeps the last good file in force, and says so.
    assert [i["name"] for i in body["schedules"]] == ["standup", "check"]
    assert str(tmp_path) not in answer.text

    # Without a scheduler that read it well before: no schedules, the error, no 500.
    async with served(tmp_path, scheduler=False) as s:
        answer = await s.api.get("/api/schedules", headers=bearer(READER))
    assert answer.status_code == 200, answer.text
    assert answer.json()["schedules"] == [] and "schedules.yaml" in answer.json()["file_error"]
    assert str(tmp_path) not in answer.text


async def test_without_a_scheduler_reads_and_pauses_work_and_run_now_says_why_not(
    tmp_path: Path,
) -> None:
    async with served(tmp_path, scheduler=False) as s:
        refused = await s.api.post("/api/schedules/standup/run-now", headers=bearer(OPERATOR))
        paused = await s.api.post("/api/schedules/check/pause", headers=bearer(OPERATOR))
        listed = await s.api.get("/api/schedules", headers=bearer(READER))
        history = await s.api.get("/api/schedules/standup/history", headers=bearer(READER))
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["type"] == "schedules_not_run"
    assert "staffroom schedules run-now standup" in error["fix"]
    assert paused.status_code == 200 and paused.json()["paused"]
    body = listed.json()
    assert not body["scheduler"]["runs_here"] and body["scheduler"]["health"] is None
    assert {i["name"]: i["paused"] for i in body["schedules"]} == {"standup": False, "check": True}
    assert history.status_code == 200 and history.json()["fires"] == []

    # The pause is the ledger's: the server's scheduler, started later, sees it.
    async with served(tmp_path, scheduler=True) as s:
        listed = await s.api.get("/api/schedules", headers=bearer(READER))
    assert {i["name"]: i["paused"] for i in listed.json()["schedules"]}["check"]
