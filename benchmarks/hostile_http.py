"""Issue 20's attacks on `staffroom serve`, each against a real server process: case, expected,
got; then a flood of unauthenticated 100 MB bodies while `/api/health` is timed.

    .venv/bin/python benchmarks/hostile_http.py                   # every case, a 30 s flood
    .venv/bin/python benchmarks/hostile_http.py --flood 5 --only body

Each case is judged by what a client sees on the wire (status, JSON error type, whether a
secret, a file's content or a server path is in the answer) and by the server's own log (no
traceback). The flood is judged by the server's resident memory (read from /proc, not from
anything the server reports) and by the latency a separate client measures for
`/api/health`. Goals: every case as expected, 0 tracebacks, RSS growth < 50 MB, health p99 <
100 ms. Exit status 1 if any is missed.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import hmac
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[1]
ADMIN = "bench-admin-secret-0123456789abcdef"
OPENER = "bench-opener-secret-0123456789abcdef"  # may only `open`
ALICE = "bench-alice-secret-0123456789abcdef"  # sop.write, users: [alice]
SLACK_SECRET = "bench-slack-signing-secret-0123"
FEISHU_TOKEN = "bench-feishu-verification-token"
CONFIG = f"""\
tokens:
  - name: admin
    secret: {ADMIN}
    operations: [read, open, post, sop.read, sop.write]
    rate_limit: 0
  - {{name: opener, secret: {OPENER}, operations: [open], rate_limit: 0}}
  - name: alice
    secret: {ALICE}
    users: [alice]
    operations: [read, sop.read, sop.write]
    rate_limit: 0
limits:
  max_connections: 64
  max_streams: 4
  max_streams_per_token: 2
  header_timeout: 2
  body_timeout: 2
adapters:
  slack:
    signing_secret: {SLACK_SECRET}
    bot_token: xoxb-bench-not-used
    groups: {{}}
  feishu:
    app_id: cli_bench
    app_secret: bench-app-secret
    verification_token: {FEISHU_TOKEN}
    users: {{ou_alice: alice}}
    groups: {{"*": {{scenario: tech-article}}}}
"""


@dataclass
class Server:
    proc: subprocess.Popen[str]
    url: str
    log: Path

    @property
    def host(self) -> tuple[str, int]:
        parts = urlsplit(self.url)
        return parts.hostname or "127.0.0.1", parts.port or 80

    def rss_kb(self) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def tracebacks(self) -> int:
        return self.log.read_text(encoding="utf-8", errors="replace").count("Traceback")

    def first_traceback(self) -> str:
        """The first traceback of the log with the line before it (what was being done), so a
        missed goal says where to look."""
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        at = next((i for i, line in enumerate(lines) if line.startswith("Traceback")), None)
        return "" if at is None else "\n".join(lines[max(0, at - 1) : at + 30])


def start(args: list[str], cwd: Path, log: Path, env: dict[str, str]) -> Server:
    argv = [sys.executable, "-m", "framework", "serve", "--port", "0", *args]
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=log.open("w", encoding="utf-8"),
        text=True,
        env=full,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if "serving on http://" not in first:
        raise SystemExit(f"serve did not start: {first!r}\n{log.read_text()}")
    url = first.split("serving on ", 1)[1].split()[0]
    threading.Thread(target=lambda: [None for _ in proc.stdout or []], daemon=True).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                return Server(proc, url, log)
        time.sleep(0.1)
    raise SystemExit(f"serve never answered\n{log.read_text()}")


def stop(server: Server) -> None:
    server.proc.terminate()
    try:
        server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.proc.kill()


# -- the wire -----------------------------------------------------------------------------------


def raw(server: Server, data: bytes, *, then: bytes = b"", wait: float = 15) -> tuple[int, str]:
    """Send ``data`` (and ``then``, tolerating a server that stops reading); the status and
    body of the answer (0 if none came)."""
    with socket.create_connection(server.host, timeout=wait) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(data)
            if then:
                sock.sendall(then)
        got = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                got += chunk
    head, _, body = got.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return status, body.decode("utf-8", "replace")


def head(server: Server, method: str, path: str, **headers: str) -> bytes:
    host, port = server.host
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def kind(body: str) -> str:
    try:
        return str(json.loads(body)["error"]["type"])
    except (ValueError, KeyError, TypeError):
        return "(not JSON)" if body else "(no body)"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- the cases ----------------------------------------------------------------------------------


@dataclass
class Case:
    group: str
    name: str
    expected: str
    run: Callable[[], str]


@dataclass
class Result:
    case: Case
    got: str

    @property
    def ok(self) -> bool:
        return self.got == self.case.expected


def slack_signed(body: bytes) -> dict[str, str]:
    stamp = str(int(time.time()))
    digest = hmac.new(SLACK_SECRET.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    return {
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": "v0=" + digest.hexdigest(),
        "content-type": "application/json",
    }


def cases(api: Server, local: Server) -> list[Case]:  # noqa: C901 (one closure per attack)
    """Every attack, as a closure over both servers and their clients."""
    client = httpx.Client(base_url=api.url, timeout=60)
    lclient = httpx.Client(base_url=local.url, timeout=60)
    port = api.host[1]
    msg = "/api/sessions/room%3Ax/messages"

    def answer(response: httpx.Response, *secrets: str) -> str:
        leaked = [s for s in secrets if s in response.text]
        said = kind(response.text) if response.status_code >= 400 else "ok"
        return f"{response.status_code} {said}" + (f" LEAKS {leaked}" if leaked else "")

    def scenario(name: str) -> Callable[[], str]:
        def go() -> str:
            got = client.put("/api/rooms/probe", json={"scenario": name}, headers=bearer(OPENER))
            return answer(got, "sk-live", "SECRET", "file not found", "tokens", str(ROOT))

        return go

    def rogue_room() -> str:
        got = client.put("/api/rooms/rogue", json={"scenario": "rogue"}, headers=bearer(OPENER))
        return answer(got, str(ROOT))

    def big_unauthenticated() -> str:
        status, body = raw(api, head(api, "POST", msg, Content_Length="200000000"), wait=10)
        return f"{status} {kind(body)}"

    def chunked_unauthenticated() -> str:
        data = head(api, "POST", msg, Transfer_Encoding="chunked")
        status, body = raw(api, data, then=b"10000\r\n" + b"x" * 0x10000 + b"\r\n")
        return f"{status} {kind(body)}"

    def over_cap_declared() -> str:
        data = head(api, "POST", msg, Content_Length="9000000", **bearer(ADMIN))
        status, body = raw(api, data)
        return f"{status} {kind(body)}"

    def over_cap_streamed() -> str:
        data = head(api, "POST", msg, Transfer_Encoding="chunked", **bearer(ADMIN))
        chunk = b"10000\r\n" + b"x" * 0x10000 + b"\r\n"
        status, body = raw(api, data, then=chunk * 40)  # 2.6 MB, no length to trust
        return f"{status} {kind(body)}"

    def largest_valid_message() -> str:
        client.put("/api/rooms/big", json={"scenario": "tech-article"}, headers=bearer(ADMIN))
        body = json.dumps({"text": "😀" * 100_000, "wait": False})  # 1.2 MB escaped
        got = client.post(
            "/api/sessions/room%3Abig/messages",
            content=body,
            headers={**bearer(ADMIN), "content-type": "application/json"},
        )
        return answer(got)

    def feishu(body: bytes) -> Callable[[], str]:
        def go() -> str:
            got = client.post(
                "/adapters/feishu/events",
                content=body,
                headers={"content-type": "application/json"},
            )
            return platform(got)

        return go

    def platform(got: httpx.Response) -> str:
        # 400 or 401, as long as it is the JSON error shape (the adapter decides which).
        shaped = kind(got.text) not in ("(not JSON)", "(no body)")
        return f"{got.status_code // 100}xx " + ("json" if shaped else got.text[:60])

    def feishu_said(chat: str, message_type: str, content: Any, mentions: list[Any]) -> str:
        """Post alice's signed (token-checked) message; what the room stored, by length."""
        event = {
            "schema": "2.0",
            "header": {"event_type": "im.message.receive_v1", "token": FEISHU_TOKEN},
            "event": {
                "sender": {"sender_id": {"open_id": "ou_alice"}, "sender_type": "user"},
                "message": {
                    "message_id": f"om_{chat}",
                    "chat_id": chat,
                    "chat_type": "group",
                    "message_type": message_type,
                    "content": json.dumps(content) if message_type != "number" else 5,
                    "mentions": mentions,
                },
            },
        }
        if message_type == "number":
            event["event"]["message"]["message_type"] = "post"  # type: ignore[index]
        body = json.dumps(event).encode()
        got = client.post(
            "/adapters/feishu/events", content=body, headers={"content-type": "application/json"}
        )
        if got.status_code != 200:
            return platform(got)
        key = f"/api/sessions/room%3Afeishu-{chat}/history"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            page = client.get(key, params={"limit": 1000}, headers=bearer(ADMIN))
            if page.status_code == 200:
                said = [e for e in page.json()["events"] if e["author"] == "alice"]
                if said:
                    return f"stored {len(said[0]['content']):,} chars"
            time.sleep(0.1)
        return "never stored"

    def empty_key() -> str:
        words = "@_user_1 please review the launch plan before Friday. " * 16
        mentions = [
            {"key": "", "id": {"open_id": "ou_nobody"}, "name": "everyone"},
            {"key": "@_user_1", "id": {"open_id": "ou_alice"}, "name": "Alice"},
        ]
        return feishu_said("oc_bench_empty", "text", {"text": words}, mentions)

    def numeric_post() -> str:
        return feishu_said("oc_bench_number", "number", None, [])

    def slack_not_utf8() -> str:
        body = b'{"type": "event_callback", "x": "\xff\xfe"}'
        got = client.post("/adapters/slack/events", content=body, headers=slack_signed(body))
        return platform(got)

    def client_id(suffix: str) -> Callable[[], str]:
        def go() -> str:
            room = f"ids-{suffix}"
            client.put(
                f"/api/rooms/{room}", json={"scenario": "tech-article"}, headers=bearer(ADMIN)
            )
            key = f"/api/sessions/room%3A{room}"
            entry = _wait_entry(client, key)
            epoch = entry["meta"]["epoch"]
            forged = f"{epoch}-{suffix}"

            def replies() -> int:
                page = client.get(f"{key}/history", params={"limit": 1000}, headers=bearer(ADMIN))
                events = page.json()["events"]
                said = [e for e in events if e["kind"] == "message"]
                texts.clear()
                texts.extend(str(e.get("content")) for e in said)
                return sum(1 for e in said if not e.get("meta", {}).get("human"))

            texts: list[str] = []
            before = replies()
            posted = client.post(
                f"{key}/messages",
                json={"text": "a forged id", "author": "author", "message_id": forged},
                headers=bearer(ADMIN),
            )
            after = replies()
            stored = "a forged id" in texts
            return f"{posted.status_code} stored={stored} replies={after > before}"

        return go

    def sop_by(action: str) -> Callable[[], str]:
        def go() -> str:
            sop = "/api/sops/tech-article"
            edit = {"author": "alice", "note": "bench edit", "goal": f"bench {action}"}
            draft = client.post(f"{sop}/versions", json=edit, headers=bearer(ALICE))
            n = draft.json().get("version")
            body: dict[str, Any] = {"by": "bob"}
            if action == "deprecate":
                body["reason"] = "bob says so"
            else:
                client.post(
                    f"{sop}/versions/{n}/approve", json={"reviewer": "alice"}, headers=bearer(ALICE)
                )
            got = client.post(f"{sop}/versions/{n}/{action}", json=body, headers=bearer(ALICE))
            return answer(got)

        return go

    def host(value: str) -> Callable[[], str]:
        def go() -> str:
            return answer(lclient.get("/api/scenarios", headers={"Host": value}))

        return go

    def origin(value: str) -> Callable[[], str]:
        def go() -> str:
            got = lclient.put(
                "/api/rooms/rebind", json={"scenario": "tech-article"}, headers={"Origin": value}
            )
            return answer(got)

        return go

    def no_paths() -> str:
        got = client.put("/api/rooms/none", json={"scenario": "nope"}, headers=bearer(ADMIN))
        client.put("/api/rooms/paths", json={"scenario": "tech-article"}, headers=bearer(ADMIN))
        entry = _wait_entry(client, "/api/sessions/room%3Apaths")
        texts = got.text + json.dumps(entry)
        return "no path" if str(ROOT) not in texts else "path leaked"

    def big_header() -> str:
        status, body = raw(
            api, b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000
        )
        return f"{status} {kind(body)}"

    def slow_headers() -> str:
        status, body = raw(api, b"GET /api/health HTTP/1.1\r\nHost: x\r\n", wait=10)
        return f"{status} {kind(body)}"

    def slow_body() -> str:
        data = head(api, "POST", msg, Content_Length="100", **bearer(ADMIN)) + b'{"te'
        status, body = raw(api, data, wait=10)
        return f"{status} {kind(body)}"

    def streams(token: str, count: int) -> Callable[[], str]:
        def go() -> str:
            path = "/api/sessions/room%3Abig/events"
            with contextlib.ExitStack() as stack:
                opened = [
                    stack.enter_context(client.stream("GET", path, headers=bearer(token)))
                    for _ in range(count)
                ]
                extra = client.get(path, headers=bearer(token))
                return f"{[o.status_code for o in opened]} then {answer(extra)}"

        return go

    def connections() -> str:
        held = [socket.create_connection(api.host, timeout=10) for _ in range(64)]
        try:
            for sock in held:
                sock.sendall(b"GET /api/health HTTP/1.1\r\n")
            status, body = raw(api, head(api, "GET", "/api/health"))
            return f"{status} {kind(body)}"
        finally:
            for sock in held:
                sock.close()

    feishu_bodies = {
        "header a string": b'{"header":"x"}',
        "header a list": b'{"header":[1]}',
        "token a number": b'{"header":{"token":5}}',
        "event_type a list": b'{"header":{"event_type":[]}}',
        "100,000-deep nesting": b"[" * 100_000 + b"]" * 100_000,
    }
    return [
        Case("scenario", "secret file as scenario", "404 unknown_name", scenario("openai_key.txt")),
        Case("scenario", "server.yaml as scenario", "404 unknown_name", scenario("server.yaml")),
        Case("scenario", "rogue.yaml in cwd", "404 unknown_name", scenario("rogue.yaml")),
        Case("scenario", "rogue id from cwd file", "404 unknown_name", rogue_room),
        Case("scenario", "missing file name", "404 unknown_name", scenario("missing.yaml")),
        Case("body", "200 MB, no token", "401 unauthorized", big_unauthenticated),
        Case("body", "chunked, no token", "401 unauthorized", chunked_unauthenticated),
        Case("body", "declared over cap", "413 too_large", over_cap_declared),
        Case("body", "streamed over cap", "413 too_large", over_cap_streamed),
        Case("body", "largest valid message", "202 ok", largest_valid_message),
        *(
            Case("adapters", f"feishu {name}", "4xx json", feishu(body))
            for name, body in feishu_bodies.items()
        ),
        Case("adapters", "slack body not UTF-8, signed", "4xx json", slack_not_utf8),
        Case("adapters", "feishu mention key ''", "stored 831 chars", empty_key),  # from 880
        Case("adapters", "feishu post content a number", "4xx json", numeric_post),
        Case("ids", "client id = entry id", "200 stored=True replies=True", client_id("entry")),
        Case(
            "ids",
            "client id = a reply's id",
            "200 stored=True replies=True",
            client_id("t0002-msg"),
        ),
        Case("sop", "deprecate as another", "403 forbidden", sop_by("deprecate")),
        Case("sop", "publish as another", "403 forbidden", sop_by("publish")),
        Case("no-auth", "Host evil.example", "421 bad_host", host("evil.example")),
        Case("no-auth", f"Host localhost:{port}", "200 ok", host(f"localhost:{local.host[1]}")),
        Case("no-auth", "Origin evil.example", "403 cross_origin", origin("http://evil.example")),
        Case("paths", "404 and entry event", "no path", no_paths),
        Case("limits", "1 MB header", "431 headers_too_large", big_header),
        Case("limits", "headers never finished", "408 request_timeout", slow_headers),
        Case("limits", "body never finished", "408 request_timeout", slow_body),
        Case(
            "limits",
            "3rd stream of a token",
            "[200, 200] then 429 too_many_streams",
            streams(ADMIN, 2),
        ),
        Case("limits", "connection past 64", "503 too_many_connections", connections),
    ]


def attempt(case: Case) -> str:
    """What ``case`` got, or the error that cut it short (a dropped connection, say)."""
    try:
        return case.run()
    except (httpx.HTTPError, OSError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:60]}"


def _wait_entry(client: httpx.Client, key: str) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        page = client.get(f"{key}/history", headers=bearer(ADMIN))
        events = page.json().get("events") if page.status_code == 200 else None
        if events:
            return dict(events[0])
        time.sleep(0.1)
    raise SystemExit(f"{key} never entered")


# -- the flood ----------------------------------------------------------------------------------


def flood(api: Server, seconds: float, senders: int) -> dict[str, float]:
    """Unauthenticated 100 MB bodies in a loop from ``senders`` threads; health timed apart."""
    stop_at = time.monotonic() + seconds
    refused = 0
    lock = threading.Lock()
    chunk = b"x" * 1_000_000
    request = head(api, "POST", "/api/sessions/room%3Ax/messages", Content_Length="100000000")

    def send() -> None:
        nonlocal refused
        while time.monotonic() < stop_at:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(api.host, timeout=5) as sock,
            ):
                sock.sendall(request)
                for _ in range(100):  # the whole 100 MB, unless the server closes first
                    sock.sendall(chunk)
            with lock:
                refused += 1

    latencies: list[float] = []
    peak = base = api.rss_kb()

    def probe() -> None:
        nonlocal peak
        with httpx.Client(base_url=api.url, timeout=10) as client:
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                client.get("/api/health")
                latencies.append((time.perf_counter() - started) * 1000)
                peak = max(peak, api.rss_kb())
                time.sleep(0.02)

    threads = [threading.Thread(target=send) for _ in range(senders)]
    threads.append(threading.Thread(target=probe))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    return {
        "seconds": seconds,
        "requests refused": refused,
        "rss growth MB": (peak - base) / 1024,
        "health p50 ms": statistics.median(latencies),
        "health p99 ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "health probes": len(latencies),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=float, default=30.0, help="seconds of flood (0: none)")
    parser.add_argument("--senders", type=int, default=4, help="flooding threads")
    parser.add_argument("--only", help="run only the cases of this group")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hostile-http-") as tmp:
        work = Path(tmp)
        config = work / "server.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        (work / "openai_key.txt").write_text("sk-live-0123456789SECRET\n", encoding="utf-8")
        rogue = (ROOT / "scenarios" / "tech_article.yaml").read_text(encoding="utf-8")
        (work / "rogue.yaml").write_text(rogue.replace("id: tech-article", "id: rogue"), "utf-8")
        common = ["--project", str(ROOT)]
        api = start(
            ["--config", str(config), "--data-dir", str(work / "data"), *common],
            work,
            work / "api.log",
            {"STAFFROOM_TOKEN": ""},
        )
        local = start(
            ["--no-auth", "--data-dir", str(work / "local"), *common],
            work,
            work / "local.log",
            {"STAFFROOM_TOKEN": ""},
        )
        try:
            results = [
                Result(c, attempt(c))
                for c in cases(api, local)
                if options.only is None or c.group == options.only
            ]
            figures = flood(api, options.flood, options.senders) if options.flood > 0 else {}
            tracebacks = api.tracebacks() + local.tracebacks()
            shown = api.first_traceback() or local.first_traceback()
        finally:
            stop(api)
            stop(local)
    width = max(len(r.case.name) for r in results)
    print(f"{'group':<9} {'case':<{width}}  {'expected':<38} got")
    for r in results:
        mark = "" if r.ok else "   <-- FAILED"
        print(f"{r.case.group:<9} {r.case.name:<{width}}  {r.case.expected:<38} {r.got}{mark}")
    failed = sum(not r.ok for r in results)
    print(f"\n{len(results) - failed} passed, {failed} failed")
    print(f"tracebacks in the server logs: {tracebacks}")
    if shown:
        print(f"the first one:\n{shown}")
    missed = failed + tracebacks
    if figures:
        print("\nflood of unauthenticated 100 MB bodies:")
        for name, value in figures.items():
            print(f"  {name:<18} {value:,.1f}")
        rss_ok = figures["rss growth MB"] < 50
        p99_ok = figures["health p99 ms"] < 100
        print(
            f"  goals: rss growth < 50 MB {'met' if rss_ok else 'MISSED'}; "
            f"health p99 < 100 ms {'met' if p99_ok else 'MISSED'}"
        )
        missed += (not rss_ok) + (not p99_ok)
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
