"""What the server tests share, as a module of its own (``from server_harness import ...``):
tokens and a server.yaml, and `staffroom serve` as a real process on a free 127.0.0.1 port.
Not in conftest.py: several test folders have a conftest, so ``from conftest import`` finds
whichever was imported first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from paths import ROOT

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


def serve_argv() -> list[str]:
    """`staffroom serve` as a user runs it (or the command itself until it is registered)."""
    from framework.surfaces.cli import app
    from framework.surfaces.cli.serve import serve

    if any(command.callback is serve for command in app.registered_commands):
        return [sys.executable, "-m", "framework", "serve"]
    code = "import typer; from framework.surfaces.cli.serve import serve; typer.run(serve)"
    return [sys.executable, "-c", code]


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


def wait_until(check: Callable[[], Any], what: str, *, seconds: float = 120) -> Any:
    """Poll ``check`` until it returns something truthy (a readiness wait, not a timing test)."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)
