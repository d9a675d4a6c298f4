"""SSE over a real server on 127.0.0.1: ids, kinds and JSON per event, resuming with
Last-Event-ID (or ?after=) with nothing twice or missing, a second subscriber seeing the
poster's messages, and the heartbeat."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from paths import ROOT
from server_harness import CONFIG, configured_server

STREAM = "/api/sessions/room%3Alaunch-42/events"
Auth = Callable[[str], dict[str, str]]


@pytest.fixture
def server(server_yaml: Path, start_server: Any, support_env: dict[str, str]) -> Any:
    return start_server(
        "--config",
        str(server_yaml),
        "--project",
        str(ROOT),
        env=support_env,
    )


@pytest.fixture
def client(server: Any) -> Iterator[httpx.Client]:
    # A read timeout turns a stream that never sends what we wait for into a failure, not a hang.
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(60, read=60)) as opened:
        yield opened


@pytest.fixture(scope="module")
def shared_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of one server for the module's tests that change nothing another test reads
    (the streams that cannot start): the same server as ``server``, started once."""
    folder = tmp_path_factory.mktemp("streams")
    with configured_server(folder, CONFIG) as server, server.client() as opened:
        yield opened


def open_room(client: httpx.Client, auth: Auth, until: Any) -> None:
    opened = client.put(
        "/api/rooms/launch-42", json={"scenario": "tech-article"}, headers=auth("admin")
    )
    assert opened.status_code == 200, opened.text
    status = "/api/sessions/room%3Alaunch-42/status"
    until(lambda: client.get(status, headers=auth("admin")).json()["room"]["waiting"], "the wait")


def read_until(
    client: httpx.Client,
    sse: Any,
    headers: dict[str, str],
    stop: Callable[[Any], bool],
    params: dict[str, str] | None = None,
) -> list[Any]:
    """Events of the stream (pings left out) up to and including the first ``stop`` accepts."""
    got: list[Any] = []
    with client.stream("GET", STREAM, headers=headers, params=params) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for message in sse(response.iter_lines()):
            if message.kind == ":":
                continue
            got.append(message)
            if stop(message):
                return got
    raise AssertionError("the stream ended")


def is_wait(message: Any) -> bool:
    return bool(message.kind == "wait")


def test_every_event_carries_its_id_kind_and_json(
    client: httpx.Client, auth: Auth, until: Any, sse: Any
) -> None:
    open_room(client, auth, until)
    streamed = read_until(client, sse, auth("reader"), is_wait)
    history = client.get(
        "/api/sessions/room%3Alaunch-42/history", params={"limit": 1000}, headers=auth("admin")
    ).json()["events"]
    assert [m.json() for m in streamed] == history
    for message in streamed:
        assert message.id == message.json()["id"] and message.kind == message.json()["kind"]
    assert streamed[0].json()["meta"]["entry"] and streamed[-1].json()["kind"] == "wait"


@pytest.mark.parametrize("how", ["Last-Event-ID", "after"])
def test_a_resumed_stream_goes_on_after_the_last_id_with_nothing_twice(
    client: httpx.Client, auth: Auth, until: Any, sse: Any, how: str
) -> None:
    open_room(client, auth, until)
    everything = read_until(client, sse, auth("reader"), is_wait)
    assert len(everything) > 3
    cut = everything[2].id
    headers, params = auth("reader"), None
    if how == "Last-Event-ID":
        headers = {**headers, "Last-Event-ID": cut}
    else:
        params = {"after": cut}
    resumed = read_until(client, sse, headers, is_wait, params)
    assert [m.id for m in resumed] == [m.id for m in everything[3:]]


def test_a_second_subscriber_sees_what_another_token_posts(
    client: httpx.Client, auth: Auth, until: Any, sse: Any, server: Any
) -> None:
    open_room(client, auth, until)
    last = read_until(client, sse, auth("reader"), is_wait)[-1].id
    headers = {**auth("reader"), "Last-Event-ID": last}
    with (
        httpx.Client(base_url=server.url, timeout=httpx.Timeout(60, read=60)) as listener,
        listener.stream("GET", STREAM, headers=headers) as response,
    ):
        assert response.status_code == 200
        posted = client.post(
            "/api/sessions/room%3Alaunch-42/messages",
            json={"author": "author", "text": "方向没问题，继续", "message_id": "im-1"},
            headers=auth("admin"),
        )
        assert posted.status_code == 200, posted.text
        expected = [e["id"] for e in posted.json()["events"]]
        seen: list[str] = []
        for message in sse(response.iter_lines()):
            if message.kind != ":":
                seen.append(message.id)
            if len(seen) == len(expected):
                break
    assert seen == expected and posted.json()["events"][0]["meta"]["client_id"] == "im-1"


def test_an_idle_stream_gets_heartbeats(
    client: httpx.Client, auth: Auth, until: Any, sse: Any
) -> None:
    open_room(client, auth, until)
    last = read_until(client, sse, auth("reader"), is_wait)[-1].id
    headers = {**auth("reader"), "Last-Event-ID": last}
    with client.stream("GET", STREAM, headers=headers) as response:
        first = next(iter(sse(response.iter_lines())))
    # Nothing happens in a waiting room, so the first thing on the wire is a ping comment.
    assert first.kind == ":" and first.data.startswith("ping")


@pytest.mark.parametrize(
    ("path", "token", "status"),
    [
        (STREAM, None, 401),
        ("/api/sessions/room%3Anope/events", "admin", 404),
        ("/api/sessions/nope/events", "admin", 400),
        (STREAM, "support", 403),
    ],
)
def test_a_stream_that_cannot_start_is_a_json_error(
    shared_client: httpx.Client, auth: Auth, path: str, token: str | None, status: int
) -> None:
    put = shared_client.put  # opening the room again is a no-op: the same room, as it was
    put("/api/rooms/launch-42", json={"scenario": "tech-article"}, headers=auth("admin"))
    answer = shared_client.get(path, headers=auth(token) if token else {})
    assert answer.status_code == status
    assert answer.json()["error"]["message"]
