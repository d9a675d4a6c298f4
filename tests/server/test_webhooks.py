"""Webhooks against a local receiver on 127.0.0.1: signed bodies, retries with backoff, failed
deliveries recorded, only employee messages sent, and the server wiring them to a room."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from paths import ROOT

from framework.serving.webhooks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookDispatcher,
    WebhookTarget,
    sign,
    verify,
)
from framework.sessions.events import EventKind, make_event

SECRET = "hook-secret-0123456789abcdef"


@dataclass
class Receiver:
    """An HTTP endpoint answering the scripted statuses in turn (then 200), recording all."""

    statuses: list[int] = field(default_factory=list)
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((dict(self.headers.items()), body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def employee_message(session: str = "room:support-1", text: str = "outline ready") -> Any:
    return make_event(session, EventKind.MESSAGE, "pm", text, meta={"model": "simulated"})


def target(url: str, **kwargs: Any) -> WebhookTarget:
    options = {"attempts": 5, "base_delay": 0.01, "timeout": 10.0, **kwargs}
    return WebhookTarget(sessions="room:support-*", url=url, secret=SECRET, **options)


def test_a_signature_is_the_hmac_of_the_raw_body() -> None:
    body = b'{"a":1}'
    signature = sign(SECRET, body)
    assert signature.startswith("sha256=") and len(signature) == 7 + 64
    assert verify(SECRET, body, signature)
    assert not verify(SECRET, body + b" ", signature)
    assert not verify("another-secret-0123456789", body, signature)


async def test_a_delivery_is_retried_until_the_receiver_takes_it(
    receiver: Receiver, tmp_path: Path
) -> None:
    receiver.statuses = [500, 503]
    failures = tmp_path / "failed.jsonl"
    hooks = WebhookDispatcher([target(receiver.url)], failures=failures)
    await hooks.start()
    event = employee_message()
    await hooks.listener("room:support-1", event)
    await hooks.close()

    assert len(receiver.got) == 3
    bodies = {body for _, body in receiver.got}
    assert len(bodies) == 1, "every try sends the same signed bytes"
    for headers, body in receiver.got:
        assert verify(SECRET, body, headers[SIGNATURE_HEADER])
        payload = json.loads(body)
        assert payload["timestamp"] == headers[TIMESTAMP_HEADER]
        assert payload["session"] == "room:support-1" and payload["event"]["id"] == event.id
        assert payload["event"]["content"] == "outline ready"
    delivery = hooks.delivered[-1]
    assert delivery.ok and delivery.attempts == 3 and delivery.status == 200
    assert not failures.exists()


@pytest.mark.parametrize(("statuses", "tries"), [([500] * 9, 3), ([410], 1)])
async def test_a_delivery_that_never_lands_is_recorded(
    receiver: Receiver, tmp_path: Path, statuses: list[int], tries: int
) -> None:
    receiver.statuses = list(statuses)
    failures = tmp_path / "failed.jsonl"
    hooks = WebhookDispatcher([target(receiver.url, attempts=3)], failures=failures)
    await hooks.start()
    event = employee_message()
    await hooks.listener("room:support-1", event)
    await hooks.close()
    assert len(receiver.got) == tries  # a 4xx refusal is final: no retry
    [record] = [json.loads(line) for line in failures.read_text("utf-8").splitlines()]
    assert record["event"] == event.id and record["attempts"] == tries
    assert record["url"] == receiver.url and record["status"] == statuses[0]
    assert SECRET not in failures.read_text("utf-8")


async def test_a_receiver_that_is_down_is_recorded_too(tmp_path: Path) -> None:
    down = Receiver()
    url = down.url
    down.close()  # nothing listens there now
    failures = tmp_path / "failed.jsonl"
    hooks = WebhookDispatcher([target(url, attempts=2)], failures=failures)
    await hooks.start()
    await hooks.listener("room:support-1", employee_message())
    await hooks.close()
    record = json.loads(failures.read_text("utf-8"))
    assert record["attempts"] == 2 and record["status"] is None and "Connect" in record["error"]


async def test_only_employee_messages_of_matching_sessions_are_sent(
    receiver: Receiver, tmp_path: Path
) -> None:
    hooks = WebhookDispatcher([target(receiver.url)], failures=tmp_path / "f.jsonl")
    await hooks.start()
    human = make_event("room:support-1", EventKind.MESSAGE, "alice", "hi", meta={"human": True})
    step = make_event("room:support-1", EventKind.SOP_STEP, "system", {"step": 1})
    await hooks.listener("room:support-1", human)
    await hooks.listener("room:support-1", step)
    await hooks.listener("room:launch-42", employee_message("room:launch-42"))
    wanted = employee_message()
    await hooks.listener("room:support-1", wanted)
    await hooks.close()
    assert [json.loads(body)["event"]["id"] for _, body in receiver.got] == [wanted.id]


async def test_a_full_queue_drops_the_delivery_and_records_it(
    receiver: Receiver, tmp_path: Path
) -> None:
    failures = tmp_path / "failed.jsonl"
    hooks = WebhookDispatcher([target(receiver.url)], failures=failures, queue_size=1)
    # Not started: nothing takes from the queue, so the second event finds it full.
    first, second = employee_message(text="one"), employee_message(text="two")
    await hooks.listener("room:support-1", first)
    await hooks.listener("room:support-1", second)
    record = json.loads(failures.read_text("utf-8"))
    assert record["event"] == second.id and record["error"] == "queue full"
    await hooks.start()
    await hooks.close()
    assert [json.loads(body)["event"]["id"] for _, body in receiver.got] == [first.id]


def test_the_server_pushes_a_rooms_employee_messages(
    tmp_path: Path, receiver: Receiver, start_server: Any, until: Any
) -> None:
    receiver.statuses = [500, 500]  # the first delivery lands on its third try
    config = tmp_path / "server.yaml"
    admin = "admin-secret-0123456789abcdef"
    config.write_text(
        f"tokens:\n  - {{name: admin, secret: {admin}, operations: [read, open, post]}}\n"
        "webhooks:\n"
        f"  - sessions: 'room:support-*'\n    url: {receiver.url}\n"
        "    secret_env: HOOK_SECRET\n    base_delay: 0.05\n",
        encoding="utf-8",
    )
    data = tmp_path / "data"
    server = start_server(
        "--config", str(config), "--project", str(ROOT), data=data, env={"HOOK_SECRET": SECRET}
    )
    headers = {"Authorization": f"Bearer {admin}"}
    with httpx.Client(base_url=server.url, timeout=120) as client:
        for room in ["support-1", "launch-42"]:
            opened = client.put(
                f"/api/rooms/{room}", json={"scenario": "tech-article"}, headers=headers
            )
            assert opened.status_code == 200
        status = "/api/sessions/room%3Asupport-1/status"
        until(lambda: client.get(status, headers=headers).json()["room"]["waiting"], "the wait")
        history = client.get(
            "/api/sessions/room%3Asupport-1/history", params={"limit": 1000}, headers=headers
        ).json()["events"]
    replies = [e["id"] for e in history if e["kind"] == "message" and not e["meta"].get("human")]
    assert replies
    until(
        lambda: len({json.loads(b)["event"]["id"] for _, b in receiver.got}) == len(replies), "all"
    )
    assert server.stop() == 0
    delivered = [json.loads(body) for _, body in receiver.got]
    assert all(verify(SECRET, body, headers[SIGNATURE_HEADER]) for headers, body in receiver.got)
    assert {d["session"] for d in delivered} == {"room:support-1"}
    assert sorted({d["event"]["id"] for d in delivered}) == sorted(replies)
    assert len(delivered) == len(replies) + 2  # two refused tries of the first one
    assert not (data / "webhook_failures.jsonl").exists()
    assert "webhook" in server.log()


def test_verify_says_no_to_a_signature_that_is_not_ascii() -> None:
    from framework.serving.webhooks import sign, verify

    assert verify("s" * 16, b"{}", sign("s" * 16, b"{}"))
    assert not verify("s" * 16, b"{}", "sha256=é")
