"""Server fixtures: tokens and a server.yaml, the app in-process (httpx.ASGITransport) for the
plain JSON tests, and `staffroom serve` as a real process on a free 127.0.0.1 port for streams,
webhooks, restarts and fuzzing. Models are the offline simulator (a test double)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_harness import (
    CONFIG,
    ROOT,
    SUPPORT,
    SUPPORT_ENV,
    TOKENS,
    ServerProcess,
    bearer,
    serve_argv,
    wait_until,
)

from framework import Settings, Staffroom
from framework.serving.gateway import Gateway
from framework.surfaces.server.app import create_app
from framework.surfaces.server.config import load_config


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


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """Start servers (stopped at the end of the test): ``start_server(*args, env=, cwd=)``."""
    started: list[ServerProcess] = []

    def start(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> ServerProcess:
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


@pytest.fixture
def until() -> Callable[..., Any]:
    return wait_until
