"""benchmarks/schedules.py at toy size, PostgreSQL leg: two `staffroom serve` replicas on the
test's database fire two 1 s schedules (one quiet) while one is kill -9'd and restarted; the
script judges by the DMs' logs and prints a verdict line with every count at zero."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT


def test_replicas_killed_under_schedules_fire_each_due_time_once(pg_url: str) -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "schedules.py"), "--leg", "postgres"]
    argv += ["--database", pg_url, "--replicas", "2", "--schedules", "2", "--quiet", "1"]
    argv += ["--fires", "10", "--kill-every", "3", "--tick", "0.2", "--delay", "0.2"]
    argv += ["--drain-timeout", "30", "--seed", "3"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    assert sum(" s kill -9 " in line for line in done.stdout.splitlines()) >= 1, done.stdout
    assert "logs: ran 10, reported missed 0" in done.stdout, done.stdout
    (verdict,) = [ln for ln in done.stdout.splitlines() if ln.startswith(("ok [", "FAIL ["))]
    assert verdict.startswith("ok [postgres]: "), done.stdout
    words = verdict.split(": ", 1)[1].split()
    counts = {name: int(n) for name, n in zip(words[::2], words[1::2], strict=True)}
    assert {"doubled", "lost", "quiet-delivered", "double-answered"} <= set(counts)
    assert set(counts.values()) == {0}, counts
