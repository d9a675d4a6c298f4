"""benchmarks/schedules.py at toy size, SQLite leg: two `staffroom schedules run` processes on
one data folder fire two 1 s schedules (one quiet) for three due times each; the script
judges by the DMs' logs and prints a verdict line with every count at zero."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT


def verdict_counts(stdout: str, leg: str) -> dict[str, int]:
    """The counts of the leg's verdict line (``ok [leg]: doubled 0 lost 0 ...``)."""
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith(("ok [", "FAIL [")) and leg in ln]
    assert line.startswith(f"ok [{leg}]: "), stdout
    words = line.split(": ", 1)[1].split()
    return {name: int(n) for name, n in zip(words[::2], words[1::2], strict=True)}


def test_two_schedulers_on_one_folder_fire_each_due_time_once() -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "schedules.py"), "--leg", "sqlite"]
    argv += ["--schedules", "2", "--quiet", "1", "--fires", "6", "--tick", "0.2"]
    argv += ["--delay", "0", "--drain-timeout", "20"]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    assert "due times 6 (2 schedules x 3" in done.stdout
    assert "logs: ran 6, reported missed 0" in done.stdout, done.stdout
    assert "quiet fires 3 of 3" in done.stdout, done.stdout
    counts = verdict_counts(done.stdout, "sqlite")
    assert {"doubled", "lost", "quiet-delivered", "unanswered"} <= set(counts)
    assert set(counts.values()) == {0}, counts
