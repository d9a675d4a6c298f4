"""JsonlLog across processes: 8 concurrent writers, and a writer killed with SIGKILL."""

from __future__ import annotations

import itertools
import os
import signal
import sys
import time
from contextlib import AbstractContextManager
from pathlib import Path
from subprocess import Popen

from log_writers import ready_writers, seqs_by_author

from framework.sessions import EventKind, JsonlLog, make_event

HELPER = Path(__file__).with_name("jsonl_writer_proc.py")


def writers(
    log: Path, go: Path, counts: dict[str, int]
) -> AbstractContextManager[dict[str, Popen[str]]]:
    """One helper process per name (its event count); each has opened the log."""
    args = [str(HELPER), str(log)]
    return ready_writers(
        {name: [sys.executable, *args, name, str(count), str(go)] for name, count in counts.items()}
    )


def test_eight_processes_append_to_one_session(tmp_path: Path) -> None:
    log, go = tmp_path / "sessions" / "room:stress.jsonl", tmp_path / "go"
    names = [f"w{i}" for i in range(8)]
    with writers(log, go, dict.fromkeys(names, 2000)) as procs:
        go.touch()
        for proc in procs.values():
            assert proc.wait(timeout=120) == 0

    raw = log.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 16_000
    events = JsonlLog(log).read_all(strict=True)
    assert len({event.id for event in events}) == 16_000
    assert seqs_by_author(log) == {name: list(range(2000)) for name in names}  # order kept
    switches = sum(a.author != b.author for a, b in itertools.pairwise(events))
    assert switches > len(names)  # the writers really interleaved
    assert not Path(f"{log}.torn").exists()


def test_writer_killed_with_sigkill_mid_run(tmp_path: Path) -> None:
    log, go = tmp_path / "room:kill.jsonl", tmp_path / "go"
    with writers(log, go, {"victim": 0, "survivor": 3000}) as procs:
        go.touch()
        deadline = time.monotonic() + 60
        while (log.stat().st_size if log.exists() else 0) < 200_000:
            assert time.monotonic() < deadline, "the victim never got going"
            time.sleep(0.005)
        os.kill(procs["victim"].pid, signal.SIGKILL)  # mid-run: it appends in a tight loop
        assert procs["victim"].wait(timeout=10) == -signal.SIGKILL
        # Its lock died with it: the survivor finishes.
        assert procs["survivor"].wait(timeout=120) == 0

    reader = JsonlLog(log)
    complete = reader.read_all()
    assert reader.problems == []
    seqs = seqs_by_author(log)
    assert seqs["survivor"] == list(range(3000))
    victim = seqs.get("victim", [])
    assert victim == list(range(len(victim)))  # no gap before the kill point
    torn = reader.torn_tail_bytes

    after = make_event("room:kill", EventKind.MESSAGE, "alice", "after the crash")
    assert JsonlLog(log).append(after)
    assert JsonlLog(log).read_all(strict=True) == [*complete, after]  # nothing complete lost
    assert Path(f"{log}.torn").exists() == (torn > 0)
