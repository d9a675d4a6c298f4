"""`staffroom serve` as a real process: the one way the tests start and stop a server.

``with ServeProcess(data, log_path, args) as server:`` or the ``start_server`` fixture
(tests/conftest.py), which stops what it started at the end of the test.

The command line is :func:`cli_process.staffroom_argv`'s (``--port``, then the test's options,
then ``--data-dir``). A server is ready once it has printed its ``serving on URL`` line and
answers ``/api/health`` (its stores are open): an event, never a fixed sleep. ``stop()`` is
Ctrl-C, as a person stops it; ``kill()`` is a crash (no shutdown work runs); ``restart()``
brings it back on the same port and data folder. What it prints goes to ``log_path`` (stderr)
and ``log_path`` with ``.access.log`` (stdout, uvicorn's access log).
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx
from cli_process import process_env, staffroom_argv
from paths import ROOT

READY_SECONDS = 120.0
"""How long a starting server gets to answer (a wait, not an assertion on time)."""


@dataclass
class ServeProcess:
    """`staffroom serve ARGS --data-dir DATA` in a subprocess; ``url`` once it answers."""

    data: Path
    """The server's data folder (never the repo's ./.staffroom)."""
    log_path: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """Environment variables for the server; the test's own ``STAFFROOM_*`` are never passed."""
    cwd: Path = ROOT
    """Where the server runs (the project is ROOT unless --project says otherwise)."""
    port: int = 0
    """0: any free port; the one it bound once started, so a restart keeps its URL."""
    url: str = ""
    proc: subprocess.Popen[str] | None = None

    def start(self) -> ServeProcess:
        argv = staffroom_argv("serve", "--port", str(self.port), *self.args, data=self.data)
        with self.log_path.open("a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(
                argv,
                cwd=self.cwd,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=process_env(self.env),
            )
        assert self.proc.stdout is not None
        try:
            self.url = self._url_printed(self.proc.stdout)
            self.port = int(self.url.rsplit(":", 1)[1])
            # uvicorn's access log goes to stdout: keep draining it, or a full pipe blocks it.
            threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True).start()
            wait_until(self._answers, f"{self.url}/api/health", seconds=READY_SECONDS)
        except BaseException:
            self.kill()  # a server that never became ready is not left running
            raise
        return self

    def _url_printed(self, stdout: IO[str]) -> str:
        """The URL of the ``serving on`` line, printed once the port is bound."""
        printed = []
        for line in stdout:
            if "serving on http://" in line:
                return line.split("serving on ", 1)[1].split()[0]
            printed.append(line)
        raise AssertionError(f"serve did not start: {''.join(printed)!r}\n{self.log()}")

    def _answers(self) -> bool:
        assert self.proc is not None and self.proc.poll() is None, f"serve exited: {self.log()}"
        try:
            return httpx.get(f"{self.url}/api/health", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    def _drain(self, stream: IO[str]) -> None:
        with self.log_path.with_suffix(".access.log").open("a", encoding="utf-8") as out:
            for line in stream:
                out.write(line)

    def stop(self, sig: int = signal.SIGINT) -> int:
        """Ctrl-C (or ``sig``), as a person stops it; the exit code. Killed if it hangs."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """Stop it the hard way (a crash): no shutdown work runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def restart(self) -> ServeProcess:
        """Killed, then started again on the same port and data folder."""
        self.kill()
        return self.start()

    def log(self) -> str:
        """What the server wrote to stderr (every start of it)."""
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""

    def __enter__(self) -> ServeProcess:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def client(self, token: str | None = None) -> httpx.Client:
        """An HTTP client on this server, with ``token`` as its bearer token."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120)


def wait_until(check: Callable[[], Any], what: str, *, seconds: float = 120) -> Any:
    """Poll ``check`` until it returns something truthy (a readiness wait, not a timing test)."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)
