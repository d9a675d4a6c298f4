"""The JSON API: catalog, rooms, DMs, posting exactly once, history, status, errors.

Most tests run the app in-process over ASGI; the restart test and the CLI's refusals run
`staffroom serve` as a real process. Replies come from the offline simulator (a test double).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from backend import backend_database
from paths import ROOT

from framework import Settings, Staffroom
from framework.serving.gateway import Gateway
from framework.surfaces.server.app import create_app
from framework.surfaces.server.config import ServerConfig, TokenGrant

ROOM = "/api/sessions/room%3Alaunch-42"
Auth = Callable[[str], dict[str, str]]


async def open_waiting_room(api: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    """Open room:launch-42 (tech-article) and wait until it asks the author, its run over
    (``busy`` is true until the run has given the room back: on a database, its lease)."""
    opened = await api.put(
        "/api/rooms/launch-42", json={"scenario": "tech-article"}, headers=headers
    )
    assert opened.status_code == 200, opened.text
    for _ in range(1200):
        status = await api.get(f"{ROOM}/status", headers=headers)
        shown = status.json() if status.status_code == 200 else {}
        if shown and shown["room"]["waiting"] and not shown["busy"]:
            return dict(shown)
        await asyncio.sleep(0.05)
    raise AssertionError("the room never waited for the author")


def human_messages(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == "message" and e.get("meta", {}).get("human")]


async def all_events(api: httpx.AsyncClient, headers: dict[str, str]) -> list[dict[str, Any]]:
    page = await api.get(f"{ROOM}/history", params={"limit": 1000}, headers=headers)
    assert page.status_code == 200, page.text
    return list(page.json()["events"])


async def test_health_needs_no_token(api: httpx.AsyncClient) -> None:
    answer = await api.get("/api/health")
    assert answer.status_code == 200 and answer.json()["status"] == "ok"


async def test_catalog_lists_the_projects_scenarios_and_employees(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    scenarios = (await api.get("/api/scenarios", headers=auth("reader"))).json()
    article = next(s for s in scenarios["scenarios"] if s["id"] == "tech-article")
    assert article["participants"] == ["pm", "engineer", "designer"]
    assert article["humans"] == ["author"] and article["double_texting"] == "enqueue"
    employees = (await api.get("/api/employees", headers=auth("reader"))).json()
    assert {"pm", "engineer", "designer"} <= {e["id"] for e in employees["employees"]}


async def test_opening_a_room_twice_gives_the_same_room_once(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    status = await open_waiting_room(api, auth("admin"))
    again = await api.put(
        "/api/rooms/launch-42", json={"scenario": "tech-article"}, headers=auth("admin")
    )
    assert again.status_code == 200 and again.json()["session"] == "room:launch-42"
    assert status["room"]["waiting_for"] == ["author"]
    assert status["room"]["sop"] == "tech-article@1" and status["room"]["step"] == 2
    assert status["policy"] == "enqueue" and status["busy"] is False and status["queued"] == 0
    entries = [e for e in await all_events(api, auth("admin")) if e.get("meta", {}).get("entry")]
    assert len(entries) == 1
    listed = (await api.get("/api/sessions", headers=auth("reader"))).json()
    assert listed["sessions"] == [{"session": "room:launch-42", "channel": "room"}]


@pytest.mark.parametrize(
    ("scenario", "status", "field"),
    [
        ("no-such-scenario", 404, "scenario"),
        ("../agents/pm", 422, "scenario"),
        ("scenarios/tech_article.yaml", 422, "scenario"),
        ("a..b", 400, "scenario"),
    ],
)
async def test_a_room_opens_only_on_a_scenario_id_of_the_project(
    api: httpx.AsyncClient, auth: Auth, scenario: str, status: int, field: str
) -> None:
    answer = await api.put("/api/rooms/r1", json={"scenario": scenario}, headers=auth("admin"))
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    assert error["field"] == field and error["message"] and error["fix"]


async def test_post_answers_with_the_message_and_every_event_its_run_caused(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    await open_waiting_room(api, auth("admin"))
    answer = await api.post(
        f"{ROOM}/messages",
        json={"author": "author", "text": "方向没问题，继续"},
        headers=auth("admin"),
    )
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert result["status"] == "done" and result["duplicate"] is False
    first = result["events"][0]
    assert first["id"] == result["message_id"] and first["author"] == "author"
    replies = [e for e in result["events"] if e["kind"] == "message" and e["author"] != "author"]
    assert replies and all(e["meta"]["model"] == "simulated" for e in replies)
    stored = await all_events(api, auth("admin"))
    assert [e["id"] for e in stored[-len(result["events"]) :]] == [
        e["id"] for e in result["events"]
    ]


async def test_an_idempotency_key_replays_the_first_answer_and_stores_nothing_twice(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    await open_waiting_room(api, auth("admin"))
    body = {"author": "author", "text": "继续"}
    headers = {**auth("admin"), "Idempotency-Key": "req-7f3a"}
    first = await api.post(f"{ROOM}/messages", json=body, headers=headers)
    before = await all_events(api, auth("admin"))
    again = await api.post(f"{ROOM}/messages", json=body, headers=headers)
    assert first.status_code == again.status_code == 200
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == {**first.json(), "duplicate": True}
    assert await all_events(api, auth("admin")) == before
    assert len(human_messages(before)) == 1


async def test_a_platform_message_id_is_stored_once(api: httpx.AsyncClient, auth: Auth) -> None:
    await open_waiting_room(api, auth("admin"))
    body = {"author": "author", "text": "继续", "message_id": "im-123"}
    first = await api.post(f"{ROOM}/messages", json=body, headers=auth("admin"))
    again = await api.post(f"{ROOM}/messages", json=body, headers=auth("admin"))
    assert first.json()["message_id"] == "im-123" and again.json()["duplicate"] is True
    # Stored in the clients' namespace, the id sent kept in meta (issue 20, item 4).
    said = human_messages(await all_events(api, auth("admin")))
    assert [e["meta"]["client_id"] for e in said] == ["im-123"]


async def test_wait_false_answers_202_and_the_run_goes_on(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    await open_waiting_room(api, auth("admin"))
    body = {"author": "author", "text": "继续", "message_id": "m-async", "wait": False}
    answer = await api.post(f"{ROOM}/messages", json=body, headers=auth("admin"))
    assert answer.status_code == 202 and answer.json()["status"] == "queued"
    for _ in range(1200):
        events = await all_events(api, auth("admin"))
        if any(e["kind"] == "outcome" for e in events):
            break
        await asyncio.sleep(0.05)
    assert [e["meta"]["client_id"] for e in human_messages(events)] == ["m-async"]
    replay = await api.post(f"{ROOM}/messages", json=body, headers=auth("admin"))
    assert replay.json()["duplicate"] is True and replay.headers["Idempotent-Replayed"] == "true"


async def test_history_pages_with_after_and_limit(api: httpx.AsyncClient, auth: Auth) -> None:
    await open_waiting_room(api, auth("admin"))
    everything = await all_events(api, auth("admin"))
    first = (await api.get(f"{ROOM}/history", params={"limit": 2}, headers=auth("reader"))).json()
    assert [e["id"] for e in first["events"]] == [e["id"] for e in everything[:2]]
    assert first["more"] is True and first["next_after"] == everything[1]["id"]
    rest = await api.get(
        f"{ROOM}/history", params={"after": first["next_after"]}, headers=auth("reader")
    )
    assert [e["id"] for e in rest.json()["events"]] == [e["id"] for e in everything[2:]]
    assert rest.json()["more"] is False
    unknown = await api.get(f"{ROOM}/history", params={"after": "nope"}, headers=auth("reader"))
    assert unknown.status_code == 400 and unknown.json()["error"]["field"] == "after"


async def test_a_dm_opens_answers_and_reads_back(api: httpx.AsyncClient, auth: Auth) -> None:
    opened = await api.post(
        "/api/dms", json={"employee": "pm", "user": "alice"}, headers=auth("admin")
    )
    assert opened.status_code == 200 and opened.json()["session"] == "dm:alice@pm"
    answer = await api.post(
        "/api/sessions/dm%3Aalice%40pm/messages",
        json={"text": "Can you outline a launch plan?"},
        headers=auth("admin"),
    )
    assert answer.status_code == 200, answer.text
    authors = [e["author"] for e in answer.json()["events"] if e["kind"] == "message"]
    assert authors[0] == "alice" and "pm" in authors[1:]
    history = await api.get("/api/sessions/dm:alice@pm/history", headers=auth("admin"))
    assert [e["id"] for e in history.json()["events"]] == [e["id"] for e in answer.json()["events"]]
    unknown = await api.post(
        "/api/dms", json={"employee": "nobody", "user": "a"}, headers=auth("admin")
    )
    assert unknown.status_code == 404 and unknown.json()["error"]["field"]


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("POST", f"{ROOM}/messages", {}, 422, "text"),
        ("POST", f"{ROOM}/messages", {"text": "hi", "colour": "red"}, 422, "colour"),
        ("POST", f"{ROOM}/messages", {"text": "   "}, 400, "text"),
        ("POST", f"{ROOM}/messages", {"text": "hi", "author": "a/b"}, 422, "author"),
        ("GET", "/api/sessions/launch-42/status", None, 400, "session"),
        ("GET", "/api/sessions/room%3A..%2Fetc/status", None, 404, None),
        ("GET", "/api/sessions/room%3A..x/status", None, 400, "chat_id"),
        ("GET", "/api/sessions/room%3Anope/status", None, 404, "session"),
        ("GET", f"{ROOM}/history?limit=100000", None, 422, "limit"),
        ("GET", "/api/no-such-thing", None, 404, None),
        ("DELETE", "/api/scenarios", None, 405, None),
    ],
)
async def test_every_error_is_json_naming_the_field_and_a_fix(
    api: httpx.AsyncClient,
    auth: Auth,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    status: int,
    field: str | None,
) -> None:
    await open_waiting_room(api, auth("admin"))
    answer = await api.request(method, path, json=body, headers=auth("admin"))
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()["error"]
    assert error["message"] and error["type"] and error["field"] == field


async def test_a_body_that_is_not_json_is_a_422_not_a_crash(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    headers = {**auth("admin"), "Content-Type": "application/json"}
    answer = await api.post(f"{ROOM}/messages", content=b"{not json", headers=headers)
    assert answer.status_code == 422 and answer.json()["error"]["message"]


async def test_knowledge_search_finds_a_library_file(
    api: httpx.AsyncClient, auth: Auth, tmp_path: Path
) -> None:
    shared = tmp_path / "data" / "library" / "shared"
    shared.mkdir(parents=True)
    (shared / "rollout.md").write_text("# Rollout\n\n灰度发布先放 5% 流量。\n", encoding="utf-8")
    found = await api.get("/api/knowledge/search", params={"q": "灰度"}, headers=auth("admin"))
    assert found.status_code == 200, found.text
    assert [h["title"] for h in found.json()["hits"]] == ["Rollout"]
    # Where it lies inside the data folder, never the server's own file system layout.
    assert found.json()["hits"][0]["source"] == "library/shared/rollout.md"
    refused = await api.get("/api/knowledge/search", params={"q": "灰度"}, headers=auth("reader"))
    assert refused.status_code == 403


def slow_project(tmp_path: Path, policy: str) -> Path:
    """A copy of the repo's project whose article scenario runs a slowed simulator."""
    project = tmp_path / "project"
    for folder in ("agents", "sop_library"):
        shutil.copytree(ROOT / folder, project / folder)
    scenario = yaml.safe_load((ROOT / "scenarios" / "tech_article.yaml").read_text("utf-8"))
    scenario["settings"]["double_texting"] = policy
    scenario["settings"]["model"] = {"provider": "simulated", "options": {"delay": 1.0}}
    (project / "scenarios").mkdir()
    text = yaml.safe_dump(scenario, allow_unicode=True)
    (project / "scenarios" / "tech_article.yaml").write_text(text, encoding="utf-8")
    return project


async def test_a_busy_room_under_reject_answers_409_with_its_state(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=slow_project(tmp_path, "reject"),
        allow_network=False,
        database=backend_database(),
    )
    config = ServerConfig(tokens=(TokenGrant("admin", "a" * 20),))
    headers = {"Authorization": "Bearer " + "a" * 20}
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        transport = httpx.ASGITransport(app=create_app(gateway, config))
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
            # The room's own entry does not make it busy; a person's message waiting does.
            await api.put("/api/rooms/r1", json={"scenario": "tech-article"}, headers=headers)
            first = await api.post(
                "/api/sessions/room:r1/messages",
                json={"text": "first", "wait": False},
                headers=headers,
            )
            assert first.status_code == 202, first.text
            answer = await api.post(
                "/api/sessions/room:r1/messages", json={"text": "hello?"}, headers=headers
            )
        await gateway.close()
    assert answer.status_code == 409, answer.text
    body = answer.json()
    assert body["status"] == "rejected" and body["policy"] == "reject"
    assert body["error"]["type"] == "room_busy" and body["error"]["fix"]
    assert "waiting" in body["room"]


def test_an_idempotency_key_is_remembered_across_a_restart(
    tmp_path: Path,
    server_yaml: Path,
    start_server: Any,
    support_env: dict[str, str],
    until: Any,
    auth: Auth,
) -> None:
    args = ("--config", str(server_yaml), "--project", str(ROOT))  # the same data folder
    headers = auth("admin")
    room = "/api/sessions/room%3Asupport-1"
    body = {"author": "author", "text": "继续"}
    keyed = {**headers, "Idempotency-Key": "retry-me-1"}

    first_server = start_server(*args, env=support_env)
    with httpx.Client(base_url=first_server.url, timeout=120) as client:
        opened = client.put(
            "/api/rooms/support-1", json={"scenario": "tech-article"}, headers=headers
        )
        assert opened.status_code == 200, opened.text
        until(
            lambda: client.get(f"{room}/status", headers=headers).json()["room"]["waiting"], "wait"
        )
        first = client.post(f"{room}/messages", json=body, headers=keyed)
        assert first.status_code == 200, first.text
        before = client.get(f"{room}/history", params={"limit": 1000}, headers=headers).json()
    assert first_server.stop() == 0

    second_server = start_server(*args, env=support_env)
    with httpx.Client(base_url=second_server.url, timeout=120) as client:
        again = client.post(f"{room}/messages", json=body, headers=keyed)
        after = client.get(f"{room}/history", params={"limit": 1000}, headers=headers).json()
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == {**first.json(), "duplicate": True}
    assert after["events"] == before["events"]
    assert len(human_messages(after["events"])) == 1


def test_a_bad_config_file_is_one_error_with_its_line(tmp_path: Path, run_serve: Any) -> None:
    bad = tmp_path / "server.yaml"
    bad.write_text("tokens:\n  - name: bot\n    secret: short\n    operations: [read]\n", "utf-8")
    done = run_serve("--config", str(bad), "--data-dir", str(tmp_path / "data"))
    assert done.code == 2
    assert f"{bad}:3 tokens[0].secret" in done.err and "fix:" in done.err
    assert "Traceback" not in done.err

    unknown_op = tmp_path / "ops.yaml"
    unknown_op.write_text(
        "tokens:\n  - name: bot\n    secret_env: NOPE_NOT_SET\n    operations: [read, dance]\n",
        "utf-8",
    )
    done = run_serve("--config", str(unknown_op), "--data-dir", str(tmp_path / "data"))
    assert done.code == 2 and f"{unknown_op}:4" in done.err and "dance" in done.err


def test_a_port_in_use_is_one_clear_error(tmp_path: Path, run_serve: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_serve("--no-auth", "--port", str(port), "--data-dir", str(tmp_path / "data"))
    assert done.code == 2
    assert f"port {port} on 127.0.0.1 is already in use" in done.err
    assert "Traceback" not in done.err


def test_an_app_from_the_project_opens_and_closes_everything_itself(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from framework.surfaces.server.app import build_app_from_project

    data = tmp_path / "data"
    settings = Settings(
        data_dir=data, project_dir=ROOT, allow_network=False, database=backend_database()
    )
    app = build_app_from_project(settings, ServerConfig(tokens=(TokenGrant("t", "t" * 20),)))
    with TestClient(app) as client:  # runs the lifespan: Staffroom and gateway open here
        answer = client.get("/api/scenarios", headers={"Authorization": "Bearer " + "t" * 20})
        assert answer.status_code == 200 and answer.json()["scenarios"]
    if settings.database is None:  # else they are the database's tables
        assert (data / "checkpoints.sqlite").is_file() and (data / "ingest.sqlite").is_file()


async def test_an_unexpected_failure_is_a_generic_json_500(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=ROOT,
        allow_network=False,
        database=backend_database(),
    )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        app = create_app(gateway, ServerConfig(no_auth=True))

        @app.get("/api/boom")
        async def boom() -> None:
            raise RuntimeError("secret internals at /srv/x")

        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as api:
            answer = await api.get("/api/boom")
        await gateway.close()
    assert answer.status_code == 500
    assert answer.json()["error"]["type"] == "internal_error"
    assert "secret internals" not in answer.text and "Traceback" not in answer.text
    assert "secret internals" in caplog.text  # the operator's log has it


async def test_a_post_behind_a_long_queue_answers_202_at_the_wait_limit(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=slow_project(tmp_path, "enqueue"),
        allow_network=False,
        database=backend_database(),
    )
    config = ServerConfig(tokens=(TokenGrant("admin", "a" * 20),), wait_limit=0.5)
    headers = {"Authorization": "Bearer " + "a" * 20}
    body = {"text": "slow one", "message_id": "slow-1"}
    url = "/api/sessions/room:r1/messages"
    async with await Staffroom.open(settings=settings) as staff:
        for attempt in ("first", "again"):
            gateway = await Gateway.open(staff)
            transport = httpx.ASGITransport(app=create_app(gateway, config))
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as api:
                if attempt == "first":  # behind the room's slowed entry: held 0.5 s, then 202
                    await api.put(
                        "/api/rooms/r1", json={"scenario": "tech-article"}, headers=headers
                    )
                    held = await api.post(url, json=body, headers=headers)
                else:
                    done = await api.post(url, json=body, headers=headers)
            await gateway.close()  # lets the run finish
    assert held.status_code == 202 and held.json()["status"] == "queued"
    assert done.status_code == 200 and done.json()["duplicate"] is True
    assert done.json()["events"][0]["meta"]["client_id"] == "slow-1"
