"""What the adapter tests share: a project with a free-chat scenario, platform payloads, and
the full server app (uvicorn on a free 127.0.0.1 port, in a thread) with an adapters config.

Employees think with the offline simulator (a deterministic test double)."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from paths import ROOT

from framework import Settings
from framework.surfaces.adapters.http import AdapterRoutes, AdaptersConfig, load_adapters
from framework.surfaces.server.app import build_app_from_project
from framework.surfaces.server.config import ServerConfig

PAYLOADS = Path(__file__).parent / "payloads"

SCENARIO = """\
id: team-chat
title: Team chat
participants: [pm, engineer]
humans: [alice]
announcement: Free chat with the team.
settings:
  max_turns: 3
"""


def payload(name: str) -> dict[str, Any]:
    """A platform payload from payloads/ (shaped like the platforms' docs)."""
    data = json.loads((PAYLOADS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def make_project(tmp_path: Path) -> Path:
    """The shipped employees plus a free-chat scenario (no SOP, max_turns 3)."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "agents", root / "agents")
    (root / "scenarios").mkdir()
    (root / "scenarios" / "team_chat.yaml").write_text(SCENARIO, encoding="utf-8")
    return root


@dataclass
class Served:
    """A running server and its data folder."""

    url: str
    data_dir: Path

    def history(self, key: str) -> list[dict[str, Any]]:
        """The session's events, read from its JSONL file."""
        path = self.data_dir / "sessions" / f"{key}.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def messages(self, key: str) -> list[tuple[str, str]]:
        """(author, text) of the session's messages."""
        return [(e["author"], e["content"]) for e in self.history(key) if e["kind"] == "message"]

    def post(self, path: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return httpx.post(self.url + path, content=body, headers=headers, timeout=30)


@contextmanager
def serve(project: Path, data_dir: Path, config: AdaptersConfig) -> Iterator[Served]:
    """The full server app (no bearer tokens: it binds 127.0.0.1) with ``config``'s adapters."""
    settings = Settings(data_dir=data_dir, project_dir=project, allow_network=False)
    app = build_app_from_project(
        settings, ServerConfig(no_auth=True), adapters=AdapterRoutes(config)
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server did not start")
            thread.join(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield Served(f"http://127.0.0.1:{port}", data_dir)
    finally:
        server.should_exit = True
        thread.join(60)


def config_file(tmp_path: Path, text: str, environ: dict[str, str]) -> AdaptersConfig:
    """``text`` written as the server config file and read by ``load_adapters``."""
    path = tmp_path / "server.yaml"
    path.write_text(text, encoding="utf-8")
    return load_adapters(path, environ=environ)
