"""Processes let go at once: the same work in several fresh interpreters, started first and
then released together by one event, so they really contend (for a file, a lock)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from multiprocessing.synchronize import Event


def run_at_once(target: Callable[[str, int, Event], None], arg: str, workers: int) -> None:
    """``target(arg, worker, go)`` in ``workers`` spawned processes; ``go`` is set once all
    have started, and each must exit 0 (within 120 s)."""
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [ctx.Process(target=target, args=(arg, w, go)) for w in range(workers)]
    for proc in procs:
        proc.start()
    go.set()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
