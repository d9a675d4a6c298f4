"""benchmarks/replica_throughput.py at toy size: one replica, then two workers, each on a
database of its own on the test's server; both legs answer every message, the CPU of the
replicas, of PostgreSQL and of the load client is reported, and the checks find nothing lost
(offline simulator, a test double, at 0.01 s a call)."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT


def test_the_throughput_benchmark_runs_both_legs_and_loses_nothing(pg_url: str) -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "replica_throughput.py")]
    # 20 messages: enough that PostgreSQL's CPU in a leg is more than one clock tick of /proc
    # (it costs about 5 ms a message; 6 messages could read as 0.0).
    argv += ["--database", pg_url, "--rooms", "4", "--messages", "5", "--delay", "0.01"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()

    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["run", "leg"])
    legs = {
        " ".join(line.split()[1:3]): line.split()[3:] for line in lines[header + 1 : header + 3]
    }
    assert sorted(legs) == ["1 replica", "2 workers"], done.stdout
    for leg, cells in legs.items():
        answered, replicas_s, pg_s = int(cells[0]), float(cells[7]), float(cells[8])
        assert answered == 20, leg  # 4 rooms x 5 messages, each answered
        assert replicas_s > 0 and pg_s > 0, f"{leg}: the replicas' and PostgreSQL's CPU"
    (ratio,) = [line for line in lines if line.startswith("run 1: 2 workers / 1 replica")]
    assert float(ratio.split("=")[1].split("x")[0]) > 0

    (checks,) = [line for line in lines if line.startswith("checks:")]
    counts = dict(part.split() for part in checks.removeprefix("checks:").split(","))
    assert set(counts) >= {"lost", "doubled", "unanswered", "interleaved"}
    assert set(counts.values()) == {"0"}, checks
