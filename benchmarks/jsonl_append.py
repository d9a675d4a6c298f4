"""Benchmark: many processes appending to one session log, JsonlLog vs unlocked O_APPEND.

Run: ``.venv/bin/python benchmarks/jsonl_append.py [--writers 8] [--events 5000] [--repeat 3]``

Writer processes are started once and reused for every run (importing the framework costs
about a second per process, which must not count). For each run, each writer builds its
events before the clock starts; then, timed, it serialises each event (``Event.to_json``)
and appends it with one call, so the ratio shows what the lock and the id index cost:

* ``baseline``  one ``os.write`` per line on an ``O_APPEND`` descriptor, no lock, no dedupe
* ``flock``     ``JsonlLog.append`` with ``lock="flock"`` (the default)
* ``filelock``  ``JsonlLog.append`` with ``lock="filelock"``

Durability is ``"turn"`` (no fsync per event). Throughput is total lines divided by the wall
time from the common start until the last writer finishes; the best of ``--repeat`` runs of
each variant is kept (runs are interleaved so a busy moment on the machine hits all alike).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog, LockKind

VARIANTS = ("baseline", "flock", "filelock")
GOAL = 0.5
Task = tuple[str, str, int]  # variant, path, events per writer


def _events(writer: int, count: int) -> list[Event]:
    return [
        make_event(
            "room:bench",
            EventKind.MESSAGE,
            f"writer-{writer}",
            f"message {i} from writer {writer}: 进度正常, nothing to report",
            meta={"seq": i},
        )
        for i in range(count)
    ]


def _append_all(variant: str, path: str, events: list[Event], start: Barrier) -> float:
    """Append every event; return the moment the clock started (after the common start)."""
    if variant == "baseline":
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        start.wait()
        began = time.perf_counter()
        for event in events:
            os.write(fd, (event.to_json() + "\n").encode())
        os.close(fd)
        return began
    lock: LockKind = "flock" if variant == "flock" else "filelock"
    log = JsonlLog(Path(path), durability="turn", lock=lock)
    log.has("warm-up")  # opens the descriptor and indexes the (empty) file before timing
    start.wait()
    began = time.perf_counter()
    for event in events:
        log.append(event)
    log.close()
    return began


def _worker(
    writer: int,
    tasks: Queue[Task | None],
    results: Queue[tuple[float, float]],
    start: Barrier,
) -> None:
    while (task := tasks.get()) is not None:
        variant, path, count = task
        events = _events(writer, count)
        began = _append_all(variant, path, events, start)
        results.put((began, time.perf_counter()))  # perf_counter is system-wide on Linux


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--writers", type=int, default=8, help="writer processes (default 8)")
    parser.add_argument("--events", type=int, default=5000, help="events per writer per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; best is kept")
    parser.add_argument("--dir", type=Path, default=None, help="folder for the test files")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated subset (baseline always runs)",
    )
    args = parser.parse_args(argv)
    wanted = {"baseline", *args.variants.split(",")}
    if not wanted <= set(VARIANTS):
        parser.error(f"--variants: choose from {', '.join(VARIANTS)}")
    variants = [variant for variant in VARIANTS if variant in wanted]

    ctx = mp.get_context("spawn")
    start = ctx.Barrier(args.writers + 1)
    results: Queue[tuple[float, float]] = ctx.Queue()
    queues: list[Queue[Task | None]] = [ctx.Queue() for _ in range(args.writers)]
    procs = [
        ctx.Process(target=_worker, args=(w, queues[w], results, start), daemon=True)
        for w in range(args.writers)
    ]
    for proc in procs:
        proc.start()
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for run in range(args.repeat):
            for variant in variants:
                path = Path(tmp) / f"{variant}-{run}.jsonl"
                for q in queues:
                    q.put((variant, str(path), args.events))
                start.wait()  # every writer has built its events and opened the file
                spans = [results.get() for _ in procs]
                wall = max(end for _, end in spans) - min(began for began, _ in spans)
                lines = path.read_bytes().count(b"\n")
                if lines != args.writers * args.events:
                    raise SystemExit(f"{variant}: {lines} lines, expected all to be written")
                best[variant] = max(best.get(variant, 0.0), lines / wall)
                path.unlink()
    for q in queues:
        q.put(None)
    for proc in procs:
        proc.join()

    base = best["baseline"]
    print(
        f"jsonl_append: {args.writers} writers x {args.events} events, one event per append, "
        f"durability=turn, {os.cpu_count()} CPUs, best of {args.repeat}"
    )
    print(f"{'variant':<10} {'lines/s':>12} {'vs baseline':>12}")
    for variant in variants:
        print(f"{variant:<10} {best[variant]:>12,.0f} {best[variant] / base:>11.2f}x")
    ratio = best["flock"] / base
    verdict = "meets" if ratio >= GOAL else "does NOT meet"
    print(f"flock {verdict} the goal: {ratio:.2f}x baseline (goal >= {GOAL}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
