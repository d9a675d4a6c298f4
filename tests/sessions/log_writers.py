"""Writer processes on one JSONL log: started together, let go together once each says it
has opened the log, and what each one wrote (the helpers jsonl_writer_proc.py and
lock_kind_writer_proc.py print ``ready``, wait for the ``go`` file, then append events whose
``meta.seq`` counts from 0)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import PIPE, Popen

from framework.sessions import JsonlLog


@contextmanager
def ready_writers(
    argvs: dict[str, list[str]], *, stderr: bool = False
) -> Iterator[dict[str, Popen[str]]]:
    """One process per name, started with its argv; yields once every one has printed
    ``ready``, and kills (if still running) and reaps them all after. ``stderr``: piped, for
    the test to read; else it is the test's own."""
    procs = {
        name: Popen(argv, stdout=PIPE, stderr=PIPE if stderr else None, text=True)
        for name, argv in argvs.items()
    }
    try:
        for proc in procs.values():
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield procs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()


def seqs_by_author(log: Path) -> dict[str, list[int]]:
    """Each writer's ``meta.seq`` numbers, in the log's order; every line must parse."""
    found: dict[str, list[int]] = defaultdict(list)
    for event in JsonlLog(log).read_all(strict=True):  # strict: every line must parse
        found[event.author].append(event.meta["seq"])
    return dict(found)
