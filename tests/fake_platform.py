"""A recording stand-in for Slack's Web API and Feishu's open API, on 127.0.0.1 (tests/adapters/
and tests/server/ share it).

It answers the calls the adapters make (``chat.postMessage``, ``auth.test``; Feishu's tenant token,
``im/v1/messages`` and ``…/reply``) the way the platforms document them, and records each,
so a test can say which employee spoke where. A test double: nothing leaves the machine.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Call:
    """One request the fake platform got."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any]
    answer: dict[str, Any] | None = None
    """What the fake answered (the id it gave a sent message)."""

    @property
    def token(self) -> str:
        return self.headers.get("authorization", "").removeprefix("Bearer ")


class FakePlatform:
    """Both platforms' APIs at ``url`` (Slack under ``/api/``, Feishu under ``/open-apis/``)."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size).decode()
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                body = json.loads(raw) if raw.startswith("{") else {}
                call = Call(
                    parts.path, query, {k.lower(): v for k, v in self.headers.items()}, body
                )
                answer = fake.answer(call)
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json; charset=utf-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakePlatform:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, call: Call) -> dict[str, Any]:
        n = next(self._ids)
        if call.path.endswith("/tenant_access_token/internal"):
            token = f"t-{call.body.get('app_id')}"
            return {"code": 0, "msg": "ok", "tenant_access_token": token, "expire": 7200}
        call.answer = self._answer(call, n)
        with self._lock:  # recorded with its answer: a test reads both
            self.calls.append(call)
        return call.answer

    @staticmethod
    def _answer(call: Call, n: int) -> dict[str, Any]:
        if call.path == "/api/chat.postMessage":
            channel = str(call.body.get("channel"))
            if channel.startswith("U"):  # a user id: Slack opens the app's DM with them
                channel = "D" + channel[1:]
            return {"ok": True, "channel": channel, "ts": f"1800000000.{n:06d}"}
        if call.path == "/api/auth.test":  # whose token: the workspace (team) of the app
            return {
                "ok": True,
                "team_id": "T0TEAM1",
                "user_id": "U0SHAREDBOT",
                "bot_id": "B0SHARED",
            }
        if call.path.startswith("/open-apis/im/v1/messages"):
            return {"code": 0, "msg": "success", "data": {"message_id": f"om_sent{n}"}}
        return {"ok": False, "error": "unknown_method", "code": 404, "msg": "unknown"}

    def sent(self, path_part: str) -> list[Call]:
        """Recorded calls whose path contains ``path_part``."""
        with self._lock:
            return [c for c in self.calls if path_part in c.path]

    def wait_for(self, path_part: str, count: int, *, timeout: float = 60.0) -> list[Call]:
        """The calls to ``path_part`` once there are ``count`` (fails after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.sent(path_part)
            if len(found) >= count:
                return found
            time.sleep(0.05)
        raise AssertionError(f"{count} calls to {path_part} never came: {self.sent(path_part)}")


def poll(check: Callable[[], bool], *, timeout: float = 60.0) -> None:
    """Wait until ``check()`` holds (fails after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("the condition never held")
