"""benchmarks/replicas.py at toy size: two replicas on the test's database, one kill -9, a
stream that resumes across replicas; it prints its figures and a verdict line with every
count at zero (offline simulator, a test double, at 0.1 s a call)."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT


def test_the_replicas_benchmark_kills_a_replica_and_finds_nothing_lost(pg_url: str) -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "replicas.py"), "--database", pg_url]
    argv += ["--replicas", "2", "--rooms", "3", "--duration", "6", "--kill-every", "4"]
    argv += ["--rate", "3", "--delay", "0.1", "--sse-rooms", "1", "--sse-switch", "2"]
    argv += ["--drain-timeout", "20", "--seed", "7"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()

    assert sum(" s kill -9 " in line for line in lines) == 1, done.stdout
    (accepted,) = [line for line in lines if line.startswith("posts accepted")]
    assert int(accepted.split()[2].rstrip(",")) > 0
    (sse,) = [line for line in lines if line.startswith("sse:")]
    assert " 1 rooms" in sse and " 0 ids received" not in sse

    verdict = lines[-1]
    assert verdict.startswith("ok: "), done.stdout
    counts = dict(zip(verdict[4:].split()[::2], verdict[4:].split()[1::2], strict=True))
    assert set(counts) >= {"lost", "doubled", "forked", "unanswered", "sse-gaps", "sse-dups"}
    assert set(counts.values()) == {"0"}, verdict
