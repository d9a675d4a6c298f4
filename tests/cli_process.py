"""The ``staffroom`` command in a real process, for the tests where the process matters.

Most tests run the CLI in-process (the ``cli`` fixture, tests/cli_in_process.py). A real
process is for what only one shows: a kill or a signal mid-run, locks held across processes,
a fresh interpreter's imports, async tests (their event loop is already running). Both
runners take the same arguments and return the same :class:`CliResult`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from backend import backend_database
from cli_in_process import CliResult, with_data_dir
from paths import ROOT


def staffroom_argv(*args: str, data: Path | None = None) -> list[str]:
    """The command line of ``staffroom ARGS`` (for ``subprocess.Popen``: a run to kill)."""
    return [sys.executable, "-m", "framework", *with_data_dir(args, data)]


def process_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without ``STAFFROOM_*``, plus the test's database on the postgres
    backend (tests/backend.py), plus ``env``: what the command sees."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    if (url := backend_database()) is not None:
        kept["STAFFROOM_DATABASE_URL"] = url
    return {**kept, **(env or {})}


def staffroom_process(
    *args: str,
    cwd: Path = ROOT,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
    data: Path | None = None,
    timeout: float = 120,
) -> CliResult:
    """``staffroom ARGS`` in a fresh interpreter, to its end (``timeout`` seconds at most)."""
    done = subprocess.run(
        staffroom_argv(*args, data=data),
        cwd=cwd,
        env=process_env(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return CliResult(done.returncode, done.stdout, done.stderr)
