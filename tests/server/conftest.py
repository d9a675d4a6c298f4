"""Server fixtures: tokens and a server.yaml, the app in-process (httpx.ASGITransport) for the
plain JSON tests, and `staffroom serve` as a real process on a free 127.0.0.1 port for streams,
webhooks, restarts and fuzzing. Models are the offline simulator (a test double)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from backend import backend_database
from cli_in_process import CliResult
from cli_process import staffroom_process
from paths import ROOT
from serve_process import wait_until
from server_harness import CONFIG, SUPPORT, SUPPORT_ENV, TOKENS, bearer

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
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=ROOT,
        allow_network=False,
        database=backend_database(),
    )
    config = load_config(server_yaml, environ={SUPPORT_ENV: SUPPORT})
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        app = create_app(gateway, config)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            yield client
        await gateway.close()


@pytest.fixture
def run_serve() -> Callable[..., CliResult]:
    """``run_serve(*args, env=...)``: `staffroom serve ARGS` expected to refuse to start (a
    real process: the refusal comes before the port is bound)."""

    def run(*args: str, env: dict[str, str] | None = None) -> CliResult:
        return staffroom_process("serve", *args, env=env)

    return run


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
