"""Server fixtures: tokens and a server.yaml, the app in-process (httpx.ASGITransport) for the
plain JSON tests, and `staffroom serve` as a real process on a free 127.0.0.1 port for streams,
webhooks, restarts and fuzzing. Models are the offline simulator (a test double)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from framework import Settings, Staffroom
from framework.serving.gateway import Gateway
from framework.surfaces.server.app import create_app
from framework.surfaces.server.config import load_config

ROOT = Path(__file__).resolve().parents[2]

ADMIN = "admin-secret-0123456789abcdef"
SUPPORT = "support-secret-0123456789abcdef"
READER = "reader-secret-0123456789abcdef"
LIMITED = "limited-secret-0123456789abcdef"
SUPPORT_ENV = "STAFFROOM_TEST_SUPPORT_TOKEN"

CONFIG = f"""\
heartbeat: 0.3
tokens:
  - name: admin
    secret: {ADMIN}
    operations: [read, open, post, sop.read, sop.write, knowledge.read]
    rate_limit: 0
  - name: support
    secret_env: {SUPPORT_ENV}
    sessions: ["room:support-*", "dm:*@pm"]
    users: [alice, author]
    operations: [read, open, post]
  - name: reader
    secret: {READER}
    operations: [read]
  - name: limited
    secret: {LIMITED}
    operations: [read]
    rate_limit: 3
"""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


TOKENS = {"admin": ADMIN, "support": SUPPORT, "reader": READER, "limited": LIMITED}


@pytest.fixture
def tokens() -> dict[str, str]:
    return dict(TOKENS)


@pytest.fixture
def auth() -> Callable[[str], dict[str, str]]:
    """``auth("admin")``: the Authorization header of a token of ``CONFIG``."""
    return lambda name: bearer(TOKENS[name])


@pytest.fixture
def support_env() -> dict[str, str]:
    """The environment ``CONFIG``'s `support` token reads its secret from."""
    return {SUPPORT_ENV: SUPPORT}


@pytest.fixture
def server_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "server.yaml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


@pytest.fixture
async def api(tmp_path: Path, server_yaml: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The app in this process over ASGI (no port), with the tokens of ``CONFIG``."""
    settings = Settings(data_dir=tmp_path / "data", project_dir=ROOT, allow_network=False)
    config = load_config(server_yaml, environ={SUPPORT_ENV: SUPPORT})
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        app = create_app(gateway, config)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client
        await gateway.close()


def serve_argv() -> list[str]:
    """`staffroom serve` as a user runs it (or the command itself until it is registered)."""
    from framework.surfaces.cli import app
    from framework.surfaces.cli.serve import serve

    if any(command.callback is serve for command in app.registered_commands):
        return [sys.executable, "-m", "framework", "serve"]
    code = "import typer; from framework.surfaces.cli.serve import serve; typer.run(serve)"
    return [sys.executable, "-c", code]


@pytest.fixture
def run_serve() -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run_serve(*args, env=...)``: `staffroom serve ARGS` expected to refuse to start."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*serve_argv(), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **(env or {})},
        )

    return run


@dataclass
class ServerProcess:
    """`staffroom serve --port 0` in a subprocess; ``url`` once it answers /api/health."""

    args: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = ROOT
    """Where the server runs (the project is ROOT unless --project says otherwise)."""
    url: str = ""
    proc: subprocess.Popen[str] | None = None

    def start(self) -> ServerProcess:
        self._log = self.log_path.open("a", encoding="utf-8")
        self.proc = subprocess.Popen(
            [*serve_argv(), "--port", "0", *self.args],
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env={**os.environ, **self.env},
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()  # printed once the port is bound
        assert "serving on http://" in first, f"serve did not start: {first!r}\n{self.log()}"
        self.url = first.split("serving on ", 1)[1].split()[0]
        # uvicorn's access log goes to stdout: keep draining it, or a full pipe blocks the server.
        threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{self.url}/api/health", timeout=5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            assert self.proc.poll() is None, f"serve exited: {self.log()}"
            assert time.monotonic() < deadline, f"serve never answered: {self.log()}"
            time.sleep(0.1)

    def _drain(self, stream: Any) -> None:
        with self.log_path.with_suffix(".access.log").open("a", encoding="utf-8") as out:
            for line in stream:
                out.write(line)

    def stop(self) -> int:
        """Ctrl-C, as a person stops it; the exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start servers (stopped at the end of the test): ``start_server(*args, env=, cwd=)``."""
    started: list[ServerProcess] = []

    def start(
        *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> ServerProcess:
        log = tmp_path / f"serve-{len(started)}.log"
        server = ServerProcess(list(args), log, env or {}, cwd)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@dataclass
class Sse:
    """One Server-Sent Event (or a ``ping`` comment, ``kind == ":"``)."""

    kind: str
    id: str | None = None
    data: str = ""

    def json(self) -> Any:
        return json.loads(self.data)


def read_sse(lines: Iterator[str]) -> Iterator[Sse]:
    """Parse an SSE stream's lines (the wire format a browser's EventSource reads)."""
    current: dict[str, str] = {}
    data: list[str] = []
    for line in lines:
        if line == "":
            if current or data:
                yield Sse(current.get("event", "message"), current.get("id"), "\n".join(data))
            current, data = {}, []
        elif line.startswith(":"):
            yield Sse(":", None, line[1:].strip())
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "data":
                data.append(value)
            else:
                current[name] = value


@pytest.fixture
def sse() -> Callable[[Iterator[str]], Iterator[Sse]]:
    return read_sse


def wait_until(check: Callable[[], Any], what: str, *, seconds: float = 120) -> Any:
    """Poll ``check`` until it returns something truthy (a readiness wait, not a timing test)."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def until() -> Callable[..., Any]:
    return wait_until
