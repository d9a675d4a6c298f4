"""Bearer tokens: 401 without one, 403 outside the token's operations, sessions or users, 429
past its rate; the server refuses to start with nobody allowed in, or open on a network."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from paths import ROOT

from framework.surfaces.server.auth import Principal, authenticate
from framework.surfaces.server.config import (
    OPERATIONS,
    ServerConfig,
    ServerConfigError,
    TokenGrant,
    load_config,
)

Auth = Callable[[str], dict[str, str]]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-token-we-know"}, {"Authorization": "Basic YTpi"}],
)
async def test_no_or_an_unknown_token_is_401_with_a_fix(
    api: httpx.AsyncClient, headers: dict[str, str]
) -> None:
    answer = await api.get("/api/sessions", headers=headers)
    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == "Bearer"
    error = answer.json()["error"]
    assert error["type"] == "unauthorized" and "Authorization: Bearer" in error["fix"]


async def test_an_operation_the_token_lacks_is_403(api: httpx.AsyncClient, auth: Auth) -> None:
    refused = await api.put(
        "/api/rooms/support-1", json={"scenario": "tech-article"}, headers=auth("reader")
    )
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert "'open'" in error["message"] and error["field"] == "operations"
    assert (await api.get("/api/scenarios", headers=auth("reader"))).status_code == 200


async def test_a_token_sees_and_posts_only_in_its_rooms_and_as_its_users(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    support = auth("support")
    opened = await api.put(
        "/api/rooms/support-1", json={"scenario": "tech-article"}, headers=support
    )
    assert opened.status_code == 200, opened.text
    other = await api.put(
        "/api/rooms/launch-42", json={"scenario": "tech-article"}, headers=support
    )
    assert other.status_code == 403 and other.json()["error"]["field"] == "session"
    await api.put("/api/rooms/launch-42", json={"scenario": "tech-article"}, headers=auth("admin"))

    as_bob = await api.post(
        "/api/sessions/room:support-1/messages",
        json={"author": "bob", "text": "hi"},
        headers=support,
    )
    assert as_bob.status_code == 403 and as_bob.json()["error"]["field"] == "user"
    for path in ["history", "status", "events"]:
        answer = await api.get(f"/api/sessions/room:launch-42/{path}", headers=support)
        assert answer.status_code == 403, path

    listed = (await api.get("/api/sessions", headers=support)).json()["sessions"]
    assert [s["session"] for s in listed] == ["room:support-1"]
    everything = (await api.get("/api/sessions", headers=auth("reader"))).json()["sessions"]
    assert [s["session"] for s in everything] == ["room:launch-42", "room:support-1"]


async def test_a_dm_is_in_scope_only_for_its_user(api: httpx.AsyncClient, auth: Auth) -> None:
    support = auth("support")
    mine = await api.post("/api/dms", json={"employee": "pm", "user": "alice"}, headers=support)
    assert mine.status_code == 200, mine.text
    for body, field in [
        ({"employee": "pm", "user": "bob"}, "user"),
        ({"employee": "engineer", "user": "alice"}, "session"),
    ]:
        refused = await api.post("/api/dms", json=body, headers=support)
        assert refused.status_code == 403 and refused.json()["error"]["field"] == field
    await api.post("/api/dms", json={"employee": "pm", "user": "bob"}, headers=auth("admin"))
    bobs = await api.get("/api/sessions/dm%3Abob%40pm/history", headers=support)
    assert bobs.status_code == 403


async def test_a_token_past_its_rate_gets_429_with_retry_after(
    api: httpx.AsyncClient, auth: Auth
) -> None:
    answers = [await api.get("/api/scenarios", headers=auth("limited")) for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 200, 429]
    assert int(answers[-1].headers["Retry-After"]) >= 1
    assert answers[-1].json()["error"]["type"] == "rate_limited"
    # Buckets are per token: another token is not slowed down.
    assert (await api.get("/api/scenarios", headers=auth("reader"))).status_code == 200


def test_secrets_are_matched_whole_and_one_token_comes_from_the_environment() -> None:
    config = load_config(None, environ={"STAFFROOM_TOKEN": "e" * 32})
    assert [t.name for t in config.tokens] == ["env"]
    assert authenticate(config, "e" * 32) is config.tokens[0]
    assert authenticate(config, "e" * 31) is None and authenticate(config, "e" * 33) is None
    assert authenticate(config, None) is None
    assert config.tokens[0].operations == frozenset(OPERATIONS)
    with pytest.raises(ServerConfigError, match="at least 16"):
        load_config(None, environ={"STAFFROOM_TOKEN": "short"})


def test_a_secret_from_an_unset_variable_names_the_variable_and_line(
    server_yaml: Path,
) -> None:
    with pytest.raises(ServerConfigError) as caught:
        load_config(server_yaml, environ={})
    assert caught.value.line == 8 and "STAFFROOM_TEST_SUPPORT_TOKEN" in caught.value.message
    assert caught.value.fix is not None and "export" in caught.value.fix


def test_two_tokens_with_one_secret_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "server.yaml"
    secret = "s" * 20
    path.write_text(
        f"tokens:\n  - {{name: a, secret: {secret}, operations: [read]}}\n"
        f"  - {{name: b, secret: {secret}, operations: [post]}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ServerConfigError, match="same secret") as caught:
        load_config(path, environ={})
    assert caught.value.line == 3


def test_scope_patterns_are_globs_over_whole_keys() -> None:
    grant = TokenGrant("t", "x" * 20, sessions=("room:support-*",), users=("ou_*",))
    principal = Principal.of(grant)
    assert principal.sees("room:support-7") and not principal.sees("room:support")
    assert not principal.sees("room:xsupport-7") and not principal.sees("dm:ou_1@pm")
    assert principal.serves("ou_7d8a") and not principal.serves("alice")


def test_a_server_with_no_tokens_refuses_to_start(tmp_path: Path, run_serve: Any) -> None:
    done = run_serve("--data-dir", str(tmp_path / "data"), env={"STAFFROOM_TOKEN": ""})
    assert done.code == 2 and "Traceback" not in done.err
    assert "no tokens are configured" in done.err and "--no-auth" in done.err


def test_no_auth_binds_only_to_loopback(tmp_path: Path, run_serve: Any) -> None:
    done = run_serve(
        "--no-auth",
        "--host",
        "0.0.0.0",
        "--data-dir",
        str(tmp_path / "data"),
        env={"STAFFROOM_TOKEN": ""},
    )
    assert done.code == 2 and "binds only to 127.0.0.1" in done.err


def test_no_auth_on_loopback_serves_without_a_token(start_server: Any) -> None:
    server = start_server(
        "--no-auth",
        "--project",
        str(ROOT),
        env={"STAFFROOM_TOKEN": ""},
    )
    answer = httpx.get(f"{server.url}/api/scenarios", timeout=60)
    assert answer.status_code == 200 and answer.json()["scenarios"]
    assert server.url.startswith("http://127.0.0.1:")


def test_the_environment_token_serves_a_real_process(start_server: Any) -> None:
    secret = "env-secret-0123456789abcdef"
    server = start_server(
        "--project",
        str(ROOT),
        env={"STAFFROOM_TOKEN": secret},
    )
    assert httpx.get(f"{server.url}/api/sessions", timeout=60).status_code == 401
    ok = httpx.get(f"{server.url}/api/sessions", headers={"Authorization": f"Bearer {secret}"})
    assert ok.status_code == 200 and ok.json() == {"sessions": []}


def test_a_config_without_tokens_means_no_one_even_in_process() -> None:
    assert authenticate(ServerConfig(), "anything-at-all-here") is None
