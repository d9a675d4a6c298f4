"""``staffroom serve --workers N``: N replica processes on one host, one listening socket.

The parent binds the port once and starts N ``staffroom serve`` processes that inherit the
socket (``--listen-fd``): the kernel hands each new connection to one of them, so a 2-core
machine answers on both cores. Each worker is a full replica — its own event loop, pool of
database connections and lease-owner name — so the workers share what they must through the
database (rooms are leased to one of them at a time), never through this process.

Without a database it refuses: workers on SQLite files would each keep their own queue per
room and their own rate limits. The parent supervises: a worker that dies (a crash, a
``kill -9``) is started again after a second (its rooms are taken over by the others once its
leases expire, and it takes new ones when it is back); Ctrl-C or SIGTERM is passed on to every
worker, which drains (stops taking connections, finishes its requests, ends its runs and gives
its leases back) before the parent exits.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from types import FrameType

from framework.errors import InputError

__all__ = ["Supervisor", "require_database"]

RESTART_DELAY = 1.0
"""Seconds before a worker that died is started again (a crash loop does not spin)."""
DRAIN_SECONDS = 60.0
"""How long a stopping worker may take to drain before it is killed."""


def require_database(workers: int, database: str | None) -> None:
    """Several workers need a database to share rooms through; say so, with the fix."""
    if workers > 1 and database is None:
        raise InputError(
            f"--workers {workers} needs a database: worker processes on SQLite files would "
            "each keep their own queue per room and their own rate limits",
            field="--workers",
            fix="give --database postgresql://... (or $STAFFROOM_DATABASE_URL, or database: "
            "in server.yaml; `make postgres` starts a local one), or serve with one worker",
        )


@dataclass
class Supervisor:
    """Start ``count`` workers on ``sock`` with ``args`` (``serve``'s own options), keep them
    running, stop them all on Ctrl-C / SIGTERM."""

    count: int
    sock: socket.socket
    args: list[str]
    workers: list[subprocess.Popen[bytes] | None] = field(default_factory=list)
    stopping: bool = False

    def _start(self) -> subprocess.Popen[bytes]:
        fd = self.sock.fileno()
        argv = [sys.executable, "-m", "framework", "serve", *self.args, "--listen-fd", str(fd)]
        return subprocess.Popen(argv, pass_fds=(fd,))

    def _stop(self, signum: int, _frame: FrameType | None) -> None:
        # Only a flag: the handler runs between any two bytecodes of run(), maybe inside a
        # _start() whose worker is not in the list yet; the loop signals them all once it ends.
        self.stopping = True

    def run(self) -> int:
        """Serve until stopped; 0 when every worker drained and exited cleanly."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._stop)
        self.workers = [self._start() for _ in range(self.count)]
        died_at: dict[int, float] = {}
        while not self.stopping:
            for i, proc in enumerate(self.workers):
                if proc is None or proc.poll() is None:
                    continue
                # A worker died while nobody asked it to: start another in its place.
                when = died_at.setdefault(i, time.monotonic())
                if not self.stopping and time.monotonic() - when >= RESTART_DELAY:
                    print(
                        f"staffroom: worker {proc.pid} exited ({proc.returncode}); starting "
                        "another",
                        file=sys.stderr,
                    )
                    self.workers[i] = self._start()
                    died_at.pop(i, None)
            time.sleep(0.1)
        return self._drain()

    def _drain(self) -> int:
        for proc in self.workers:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + DRAIN_SECONDS
        code = 0
        for proc in self.workers:
            if proc is None:
                continue
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.returncode not in (0, -signal.SIGTERM):
                code = 1
        return code
