"""benchmarks/server_load.py at toy size: it starts `staffroom serve`, drives it over HTTP,
prints its figures and finds nothing lost, doubled or interleaved (offline simulator, a test
double, at 0.01 s a call)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType
from typing import Any

from paths import ROOT

POLICIES = ["enqueue", "reject", "interrupt", "coalesce"]


def rows_after(lines: list[str], header_word: str) -> list[list[str]]:
    """The rows of the table whose header holds ``header_word``, split on blanks."""
    start = next(i for i, line in enumerate(lines) if header_word in line.split())
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_the_load_benchmark_prints_its_figures_and_loses_nothing() -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "server_load.py")]
    argv += ["--rooms", "3", "--messages", "2", "--delay", "0.01", "--burst", "4"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()

    (load,) = rows_after(lines, "held/s")
    # run, "3 x 2", seconds, held/s, ceiling/s, wall p50/p99, framework p50/p99, cpu x2
    assert load[1:4] == ["3", "x", "2"]
    held, ceiling = float(load[5]), float(load[6])
    assert held > 0 and ceiling == 300  # 3 rooms / 0.01 s
    wall_p50, framework_p50 = float(load[7]), float(load[9])
    assert 0 < framework_p50 < wall_p50  # one 0.01 s turn taken off each post

    bursts = {row[1]: row for row in rows_after(lines, "coalesced")}
    assert sorted(bursts) == sorted(POLICIES)
    for policy, row in bursts.items():
        sent, done_, interrupted, coalesced, rejected = (int(v) for v in row[2:7])
        assert sent == 4 and done_ + interrupted + coalesced + rejected == 4, policy
        assert done_ >= 1, f"{policy}: at least the first message is answered"
    assert int(bursts["enqueue"][3]) == 4

    (checks,) = [line for line in lines if line.startswith("checks:")]
    counts = dict(part.split() for part in checks.removeprefix("checks:").split(","))
    assert set(counts) >= {"lost", "doubled", "unanswered", "interleaved"}
    assert set(counts.values()) == {"0"}, checks


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("server_load", ROOT / "benchmarks/server_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve annotations through it
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def message(mid: str, author: str, session: str = "room:r") -> dict[str, Any]:
    meta: dict[str, Any] = {"human": True} if author == "alice" else {"usage": {"calls": 1}}
    return {"id": mid, "kind": "message", "author": author, "session": session, "meta": meta}


def test_the_benchmark_s_checks_catch_lost_doubled_and_interleaved_messages() -> None:
    check_room = load_benchmark().check_room
    h1, e1 = message("m1", "alice"), message("a1", "pm")
    h2, e2 = message("m2", "alice"), message("a2", "pm")
    sent = {
        "m1": {"status": "done", "events": [h1, e1]},
        "m2": {"status": "done", "events": [h2, e2]},
    }
    assert not +check_room("room:r", "enqueue", [h1, e1, h2, e2], sent)
    assert check_room("room:r", "enqueue", [h1, e1, h1, h2, e2], sent)["doubled"] == 1
    assert check_room("room:r", "enqueue", [h1, e1], sent)["lost"] == 1
    mixed = check_room("room:r", "enqueue", [h1, h2, e1, e2], sent)
    assert mixed["interleaved"] == 2 and mixed["unanswered"] == 1
    other = message("x1", "pm", session="room:other")
    assert check_room("room:r", "enqueue", [h1, e1, h2, e2, other], sent)["interleaved"] == 1
    rejected = {**sent, "m3": {"status": "rejected", "events": []}}
    found = check_room("room:r", "enqueue", [h1, e1, h2, e2, message("m3", "alice")], rejected)
    assert found["doubled"] == 1 and found["policy"] == 1 and found["stray"] == 1
