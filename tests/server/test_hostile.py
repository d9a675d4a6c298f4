"""`staffroom serve` against an attacker, over real sockets to a real process (issue 20):
the token before the body, body caps counted as they stream, slow and oversized requests,
connection and stream ceilings, `--no-auth` kept to loopback, names bound to tokens, and no
server path or file content in any answer.

Raw sockets where the point is what the server does before a request is whole (httpx would
send the whole body first). One server per module: starting one takes seconds.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from paths import ROOT
from serve_process import ServeProcess
from server_harness import ADMIN, CONFIG, READER, configured_server

from framework.surfaces.server.limits import MESSAGE_CHARS, BodyLimits

LIMITS = """\
limits:
  max_connections: 12
  max_streams: 3
  max_streams_per_token: 2
  header_timeout: 2
  body_timeout: 2
"""
ALICE_ONLY = "alice-only-secret-0123456789abcdef"
ALICE_SOP = f"""\
  - name: alice-sop
    secret: {ALICE_ONLY}
    users: [alice]
    operations: [read, sop.read, sop.write]
    rate_limit: 0
"""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A server with tight limits, the conftest's tokens and an alice-only SOP writer."""
    folder = tmp_path_factory.mktemp("hostile")
    tokens = CONFIG.replace("tokens:\n", "tokens:\n" + ALICE_SOP)
    with configured_server(folder, tokens + LIMITS) as started:
        yield started


def address(server: ServeProcess) -> tuple[str, int]:
    parts = urlsplit(server.url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def connect(server: ServeProcess) -> socket.socket:
    sock = socket.create_connection(address(server), timeout=15)
    return sock


def read_response(sock: socket.socket, seconds: float = 15) -> tuple[int, dict[str, str], Any]:
    """Status, headers and JSON body of the one response on ``sock`` (it must close)."""
    sock.settimeout(seconds)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
        head, sep, body = data.partition(b"\r\n\r\n")
        if sep:
            length = next(
                (
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                None,
            )
            if length is not None and len(body) >= length:
                break
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines and lines[0].startswith("HTTP/1.1 "), f"no HTTP response: {data[:200]!r}"
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    return status, headers, json.loads(body) if body else None


def request_head(server: ServeProcess, method: str, path: str, headers: dict[str, str]) -> bytes:
    host, port = address(server)
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


POST_PATH = "/api/sessions/room%3Ax/messages"


def test_no_token_is_401_before_a_200_mb_body_is_read(server: ServeProcess) -> None:
    with connect(server) as sock:
        # Only the headers are sent: a server that reads the body first never answers.
        sock.sendall(request_head(server, "POST", POST_PATH, {"Content-Length": "200000000"}))
        status, headers, body = read_response(sock, seconds=10)
    assert status == 401 and body["error"]["type"] == "unauthorized"
    assert headers["connection"] == "close"


def test_a_chunked_body_without_a_token_is_refused_at_once(server: ServeProcess) -> None:
    with connect(server) as sock:
        head = request_head(
            server, "POST", POST_PATH, {"Transfer-Encoding": "chunked", **bearer("wrong" * 5)}
        )
        sock.sendall(head + b"10000\r\n" + b"x" * 0x10000 + b"\r\n")
        status, _, body = read_response(sock, seconds=10)
    assert status == 401 and "unknown bearer token" in body["error"]["message"]


def test_a_declared_length_over_the_cap_is_413_before_reading(server: ServeProcess) -> None:
    cap = BodyLimits().messages
    with connect(server) as sock:
        sock.sendall(
            request_head(
                server, "POST", POST_PATH, {"Content-Length": str(cap + 1), **bearer(ADMIN)}
            )
        )
        status, headers, body = read_response(sock, seconds=10)
    assert status == 413 and body["error"]["type"] == "too_large"
    assert f"{cap:,}" in body["error"]["message"] and headers["connection"] == "close"


def test_a_streamed_body_is_counted_not_trusted(server: ServeProcess) -> None:
    """Chunked, so no length to trust: the server stops it once it passes the cap, and the
    client still reads the 413 though it was sending (the server closes lingering)."""
    cap = BodyLimits().messages
    chunk = b"x" * 65536
    with connect(server) as sock:
        sock.sendall(
            request_head(
                server, "POST", POST_PATH, {"Transfer-Encoding": "chunked", **bearer(ADMIN)}
            )
        )
        sent = 0
        while not select.select([sock], [], [], 0.01)[0]:
            sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sent += len(chunk)
            # Socket buffers on both sides hold megabytes, so the client gets ahead of the
            # server; a server that never stopped would not answer before this.
            assert sent < 64 * cap, "the server never refused the body"
        status, _, body = read_response(sock)
    assert status == 413 and body["error"]["type"] == "too_large" and sent > cap // 2


def test_the_largest_valid_message_is_not_refused_for_its_size(server: ServeProcess) -> None:
    """100,000 characters outside the BMP, each escaped as a surrogate pair: 1.2 MB of JSON."""
    with httpx.Client(base_url=server.url, timeout=60) as client:
        opened = client.put(
            "/api/rooms/big", json={"scenario": "tech-article"}, headers=bearer(ADMIN)
        )
        assert opened.status_code == 200, opened.text
        text = "😀" * MESSAGE_CHARS
        body = json.dumps({"text": text, "wait": False})  # ensure_ascii: \\ud83d\\ude00 each
        assert len(body) > 1_000_000
        headers = {**bearer(ADMIN), "content-type": "application/json"}
        answer = client.post("/api/sessions/room%3Abig/messages", content=body, headers=headers)
        assert answer.status_code == 202, answer.text
        over = json.dumps({"text": text + "😀", "wait": False})
        refused = client.post("/api/sessions/room%3Abig/messages", content=over, headers=headers)
        assert refused.status_code == 422 and refused.json()["error"]["field"] == "text"


def test_a_slow_body_is_408(server: ServeProcess) -> None:
    with connect(server) as sock:
        head = request_head(server, "POST", POST_PATH, {"Content-Length": "100", **bearer(ADMIN)})
        sock.sendall(head + b'{"text": ')  # then nothing, past body_timeout (2 s)
        status, _, body = read_response(sock, seconds=15)
    assert status == 408 and body["error"]["type"] == "request_timeout"


def test_slow_headers_are_cut_off(server: ServeProcess) -> None:
    with connect(server) as sock:
        sock.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never finished
        started = time.monotonic()
        status, _, body = read_response(sock, seconds=15)
        waited = time.monotonic() - started
    assert status == 408 and body["error"]["type"] == "request_timeout"
    assert waited < 14  # header_timeout is 2 s: cut off, not held until our own timeout


def test_a_one_megabyte_header_is_a_json_431(server: ServeProcess) -> None:
    with connect(server) as sock:
        head = b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
        # The server stops reading early: its answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + b"a" * 1_000_000 + b"\r\n\r\n")
        status, _, body = read_response(sock)
    assert status == 431 and body["error"]["type"] == "headers_too_large"


def test_a_malformed_request_line_is_a_json_400(server: ServeProcess) -> None:
    with connect(server) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status, headers, body = read_response(sock)
    assert status == 400 and body["error"]["type"] == "malformed_request"
    assert headers["content-type"] == "application/json"


def test_connections_past_the_ceiling_get_a_json_503(server: ServeProcess) -> None:
    held = [connect(server) for _ in range(12)]  # max_connections: 12
    try:
        for sock in held:  # each half a request, so none is answered and closed meanwhile
            sock.sendall(b"GET /api/health HTTP/1.1\r\n")
        with connect(server) as extra:
            extra.sendall(request_head(server, "GET", "/api/health", {}))
            status, _, body = read_response(extra)
        assert status == 503 and body["error"]["type"] == "too_many_connections"
    finally:
        for sock in held:
            sock.close()


def test_streams_past_the_token_and_server_ceilings_get_429_and_503(
    server: ServeProcess, until: Callable[..., Any]
) -> None:
    events = "/api/sessions/room%3Astreams/events"
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=30)) as client:
        opened = client.put(
            "/api/rooms/streams", json={"scenario": "tech-article"}, headers=bearer(ADMIN)
        )
        assert opened.status_code == 200
        with (
            client.stream("GET", events, headers=bearer(ADMIN)) as one,
            client.stream("GET", events, headers=bearer(ADMIN)) as two,
        ):
            assert one.status_code == two.status_code == 200
            third = client.get(events, headers=bearer(ADMIN))
            assert third.status_code == 429 and third.json()["error"]["type"] == "too_many_streams"
            with client.stream("GET", events, headers=bearer(READER)) as other:
                assert other.status_code == 200  # another token has its own two
                full = client.get(events, headers=bearer(READER))
                assert full.status_code == 503 and full.json()["error"]["type"] == "server_busy"
        # Closed streams are given back (noticed at the next heartbeat): two again for admin.
        until(lambda: _two_streams_open(client, events), "the stream slots to free up", seconds=30)


def _two_streams_open(client: httpx.Client, path: str) -> bool:
    with (
        client.stream("GET", path, headers=bearer(ADMIN)) as one,
        client.stream("GET", path, headers=bearer(ADMIN)) as two,
    ):
        return one.status_code == two.status_code == 200


def test_deprecate_and_publish_record_only_a_person_the_token_acts_for(
    server: ServeProcess,
) -> None:
    sop = "/api/sops/tech-article"
    with httpx.Client(base_url=server.url, timeout=60) as client:
        latest = client.get(sop, headers=bearer(ALICE_ONLY)).json()["versions"][-1]["version"]
        edit = {"author": "alice", "note": "clearer outline", "goal": "A clearer goal"}
        draft = client.post(f"{sop}/versions", json=edit, headers=bearer(ALICE_ONLY))
        assert draft.status_code == 201, draft.text
        n = draft.json()["version"]
        assert n > latest
        forged = client.post(
            f"{sop}/versions/{n}/deprecate",
            json={"reason": "bob says no", "by": "bob"},
            headers=bearer(ALICE_ONLY),
        )
        assert forged.status_code == 403 and forged.json()["error"]["field"] == "user"
        approved = client.post(
            f"{sop}/versions/{n}/approve", json={"reviewer": "alice"}, headers=bearer(ALICE_ONLY)
        )
        assert approved.status_code == 200, approved.text
        as_bob = client.post(
            f"{sop}/versions/{n}/publish", json={"by": "bob"}, headers=bearer(ALICE_ONLY)
        )
        assert as_bob.status_code == 403
        published = client.post(f"{sop}/versions/{n}/publish", json={}, headers=bearer(ALICE_ONLY))
        assert published.status_code == 200, published.text
        log = published.json()["change_log"]
        assert any(e["why"] == "published" and e["by"] == "alice" for e in log), log
        retired = client.post(
            f"{sop}/versions/{n}/deprecate",
            json={"reason": "superseded"},
            headers=bearer(ALICE_ONLY),
        )
        assert retired.status_code == 200
        assert retired.json()["change_log"][-1]["by"] == "alice"


def test_no_server_path_reaches_an_answer(server: ServeProcess, until: Callable[..., Any]) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        unknown = client.put(
            "/api/rooms/nowhere", json={"scenario": "no-such-scenario"}, headers=bearer(ADMIN)
        )
        assert unknown.status_code == 404
        opened = client.put(
            "/api/rooms/paths", json={"scenario": "tech-article"}, headers=bearer(ADMIN)
        )
        assert opened.status_code == 200
        page = "/api/sessions/room%3Apaths/history"
        history = until(
            lambda: (h := client.get(page, headers=bearer(ADMIN))).json()["events"] and h,
            "the room's entry",
        )
    for text in (unknown.text, history.text):
        assert str(ROOT) not in text and str(ROOT.parent) not in text, text[:500]
    entry = history.json()["events"][0]
    source = entry["content"].get("scenario_source")
    assert source is None or not Path(source).is_absolute()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A `--no-auth` try-out server whose working directory holds a secret and a rogue
    scenario, as a careless operator's might."""
    folder = tmp_path_factory.mktemp("local")
    (folder / "openai_key.txt").write_text("sk-live-0123456789abcdefSECRET\n", encoding="utf-8")
    rogue = (ROOT / "scenarios" / "tech_article.yaml").read_text(encoding="utf-8")
    (folder / "rogue.yaml").write_text(
        rogue.replace("id: tech-article", "id: rogue"), encoding="utf-8"
    )
    args = ["--no-auth", "--project", str(ROOT)]
    env = {"STAFFROOM_TOKEN": ""}
    with ServeProcess(folder / "data", folder / "serve.log", args, env, folder) as started:
        yield started


@pytest.mark.parametrize("name", ["openai_key.txt", "rogue.yaml", "server.yaml", "missing.yaml"])
def test_a_scenario_name_never_reads_a_file(local: ServeProcess, name: str) -> None:
    answer = httpx.put(f"{local.url}/api/rooms/x-{len(name)}", json={"scenario": name}, timeout=60)
    assert answer.status_code in (404, 422), answer.text
    text = answer.text
    assert "sk-live" not in text and "SECRET" not in text and "file not found" not in text.lower()
    assert "tech-article" in text or answer.status_code == 422  # names the ids there are
    assert answer.json()["error"]["type"] in ("unknown_name", "invalid_request")


def test_no_auth_answers_only_to_loopback_host_names(local: ServeProcess) -> None:
    port = urlsplit(local.url).port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", f"[::1]:{port}"):
        ok = httpx.get(f"{local.url}/api/scenarios", headers={"Host": host}, timeout=30)
        assert ok.status_code == 200, (host, ok.text)
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", ""):
        refused = httpx.get(f"{local.url}/api/scenarios", headers={"Host": host}, timeout=30)
        assert refused.status_code in (400, 421), (host, refused.text)
        assert refused.json()["error"]["type"] in ("bad_host", "malformed_request")


def test_no_auth_refuses_changes_from_another_origin(local: ServeProcess) -> None:
    body = {"scenario": "tech-article"}
    port = urlsplit(local.url).port
    for origin in ("http://evil.example", "null", f"http://localhost:{port + 1}"):
        refused = httpx.put(
            f"{local.url}/api/rooms/rebind", json=body, headers={"Origin": origin}, timeout=30
        )
        assert refused.status_code == 403 and refused.json()["error"]["type"] == "cross_origin"
    cross = httpx.put(
        f"{local.url}/api/rooms/rebind",
        json=body,
        headers={"Sec-Fetch-Site": "cross-site"},
        timeout=30,
    )
    assert cross.status_code == 403
    same = httpx.put(
        f"{local.url}/api/rooms/rebind",
        json=body,
        headers={"Origin": f"http://127.0.0.1:{port}"},
        timeout=60,
    )
    assert same.status_code == 200, same.text


def test_an_sop_edit_of_the_largest_card_is_not_refused_for_its_size(
    server: ServeProcess,
) -> None:
    """A 200,000-character card is over 2 MB as escaped JSON: judged by the SOP rules, never
    by the body cap (which refuses one byte more than the largest valid edit)."""
    sop = "/api/sops/tech-article"
    with httpx.Client(base_url=server.url, timeout=60) as client:
        card = client.get(f"{sop}/versions/1", headers=bearer(ADMIN)).json()["card"]
        padded = card + "\n" + "😀" * (200_000 - len(card) - 1)
        body = json.dumps({"author": "admin", "note": "long notes", "card": padded})
        assert len(body) > 2_000_000
        headers = {**bearer(ADMIN), "content-type": "application/json"}
        answer = client.post(f"{sop}/versions", content=body, headers=headers)
        assert answer.status_code in (201, 400, 422), answer.text[:300]
        too_big = "x" * (BodyLimits().sop_edits + 1)
        refused = client.post(f"{sop}/versions", content=too_big, headers=headers)
        assert refused.status_code == 413


def test_an_old_logs_absolute_paths_are_rewritten_before_they_leave(tmp_path: Path) -> None:
    """Logs written before issue 20 carry the absolute scenario_source; memory fallbacks name
    their file. What leaves the server is relative (or the file name only)."""
    from framework.surfaces.server.public import PathScrubber

    project, data = tmp_path / "proj", tmp_path / "proj" / ".staffroom"
    scrub = PathScrubber(project, data)
    old = {
        "kind": "plan",
        "content": {"scenario_source": str(project / "scenarios" / "x.yaml")},
        "meta": {"file": str(data / "memory" / "pm" / "alice" / "MEMORY.md")},
    }
    shown = scrub.event(old)
    assert shown["content"]["scenario_source"] == "scenarios/x.yaml"
    assert shown["meta"]["file"] == "<data>/memory/pm/alice/MEMORY.md"
    elsewhere = scrub.event({"content": {"scenario_source": "/home/op/team/scenarios/y.yaml"}})
    assert elsewhere["content"]["scenario_source"] == "y.yaml"
    said = scrub.text(f"unknown scenario 'z'; files live in {project}/scenarios/")
    assert said == "unknown scenario 'z'; files live in scenarios/"
