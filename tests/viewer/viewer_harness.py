"""A real server process per test: uvicorn on a free 127.0.0.1 port over tmp_path's data
folder, the offline simulator, and two tokens (a manager's and a read-only viewer's)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Browser, Page

HERE = Path(__file__).resolve().parent
MANAGER = "manager-token-0123456789"
VIEWER = "viewer-token-0123456789ab"
BOB = "bob-reviewer-token-0123456789"
"""A reviewer's own token: it may act only for bob."""
CONFIG = f"""\
heartbeat: 1
tokens:
  - name: manager
    secret: {MANAGER}
    operations: [read, open, post, sop.read, sop.write]
    rate_limit: 0
  - name: viewer
    secret: {VIEWER}
    operations: [read, sop.read]
    rate_limit: 0
  - name: bob
    secret: {BOB}
    users: [bob]
    operations: [sop.read, sop.write]
    rate_limit: 0
"""
START_WAIT = 60.0
"""Seconds a starting server gets to answer /api/health (a wait, not an assertion)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One server process; ``restart()`` brings it back on the same port and data folder."""

    root: Path
    port: int = field(default_factory=free_port)
    no_auth: bool = False
    args: list[str] = field(default_factory=list)
    """More options for viewer_server.py (``--project``, ``--model-url``)."""
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables for the server (the test's STAFFROOM_* ones are never passed)."""
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def start(self) -> None:
        config = self.root / "server.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
        env.update(self.env)
        self.starts += 1
        log = (self.root / f"server-{self.starts}.log").open("wb")
        command = [sys.executable, str(HERE / "viewer_server.py"), "--data", str(self.data)]
        command += ["--port", str(self.port), "--config", str(config)]
        command += ["--no-auth"] if self.no_auth else []
        command += self.args
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.log_text()}")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"the server did not start: {self.log_text()}")

    def kill(self) -> None:
        """Stop it the hard way (a crash): no shutdown work runs."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        self.kill()
        self.start()

    def log_text(self) -> str:
        return (self.root / f"server-{self.starts}.log").read_text(errors="replace")[-4000:]

    def client(self, token: str | None = MANAGER) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 60_000
"""How long a step may take to show up (a wait for the page, never an assertion on time)."""


class Pages:
    """Opens pages in fresh browser contexts (a language, a time zone, a window size) and
    fails the test if any of them raised a JavaScript error."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.contexts: list[Any] = []
        self.errors: list[str] = []

    def open(self, **options: Any) -> Page:
        context = self.browser.new_context(**{"locale": "en-US", **options})
        context.set_default_timeout(WAIT_MS)
        self.contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()
