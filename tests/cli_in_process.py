"""The ``staffroom`` command run in the test's own process, through its real entry point.

``main`` is what the console script calls: user mistakes print one ``error:`` line and exit 2.
Running it here (argv, stdin, cwd and ``STAFFROOM_*`` set for the call, output captured) sees
exactly that, without starting an interpreter per command. An exception ``main`` lets through
is printed with its traceback and exits 1, as Python would, so tests can assert that no
"Traceback" reaches a person. Use a real process where the process matters (kills, locks,
signals, the console script itself): tests/cli_process.py, same arguments and result.
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from backend import backend_database


@dataclass(frozen=True)
class CliResult:
    """What a person sees of one ``staffroom`` command: exit status, stdout, stderr."""

    code: int
    out: str
    err: str


Cli = Callable[..., CliResult]
"""``cli(*args, cwd=ROOT, stdin="", env=None, data=None) -> CliResult``."""


def with_data_dir(args: tuple[str, ...], data: Path | None) -> list[str]:
    """``args`` with ``--data-dir DATA`` where the command takes it: after ``sop`` (the group
    holds the option), else at the end."""
    if data is None:
        return list(args)
    where = ["--data-dir", str(data)]
    return [args[0], *where, *args[1:]] if args[:1] == ("sop",) else [*args, *where]


def in_process_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, root: Path
) -> Cli:
    """A runner for ``staffroom ARGS``; no ``STAFFROOM_*`` comes from the environment unless
    ``env=`` sets it, and ``cwd=`` (default ``root``) is the folder it runs in. ``data=``
    gives ``--data-dir`` where the command takes it (after ``sop``, before its sub-command)."""
    from framework.surfaces.cli import main  # here: only tests that use it pay the import

    for name in [n for n in os.environ if n.startswith("STAFFROOM_")]:
        monkeypatch.delenv(name)

    def run(
        *args: str,
        cwd: Path = root,
        stdin: str | None = "",
        env: dict[str, str] | None = None,
        data: Path | None = None,
    ) -> CliResult:
        with monkeypatch.context() as scoped:
            scoped.chdir(cwd)
            scoped.setattr(sys, "argv", ["staffroom", *with_data_dir(args, data)])
            scoped.setattr(sys, "stdin", io.StringIO(stdin or ""))
            if (url := backend_database()) is not None:  # the postgres backend (backend.py)
                scoped.setenv("STAFFROOM_DATABASE_URL", url)
            for name, value in (env or {}).items():
                scoped.setenv(name, value)
            capsys.readouterr()
            code: int | str | None = 0
            try:
                main()
            except SystemExit as exc:
                code = exc.code
            except Exception:
                sys.stderr.write(traceback.format_exc())
                code = 1
            out, err = capsys.readouterr()
        return CliResult(code if isinstance(code, int) else 0 if code is None else 1, out, err)

    return run
