"""Issue 8's hostile inputs and broken states, each driven as a subprocess: case, expected, got.

    .venv/bin/python benchmarks/hostile_input.py                # every case, 50 kill trials
    .venv/bin/python benchmarks/hostile_input.py --trials 10 --only script

Every case runs the real ``staffroom`` command (or a short Python program on the public API)
in a fresh data folder and judges what came out by what a user would see: the exit status,
the message, the files on disk, the prompts a model received. Goal: 0 tracebacks, 0 hangs,
0 escapes from the data folder, 0 leaks of DM memory, 0 doubled messages over the
kill-and-resume trials. Exit status 1 if any case fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scenarios" / "tech_article.script.txt"
TIMEOUT = 60.0


@dataclass
class Ran:
    rc: int | None
    out: str
    err: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.rc is None

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.out + self.err

    @property
    def text(self) -> str:
        return self.out + self.err


def run(work: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> Ran:
    """``staffroom ARGS`` with ``work/data`` as the data folder and ``work/proj`` as project."""
    full = {
        **os.environ,
        "STAFFROOM_HOME": str(work / "data"),
        "STAFFROOM_PROJECT": str(work / "proj"),
        **(env or {}),
    }
    return _spawn([sys.executable, "-m", "framework", *args], work, full, stdin)


def api(work: Path, code: str) -> Ran:
    """A short program on the public API (``staff`` is open on ``work``); prints its verdict."""
    program = (
        "import asyncio, sys\nfrom pathlib import Path\nfrom framework import Staffroom\n"
        "async def main(staff):\n"
        + "".join(f"    {line}\n" for line in code.strip().splitlines())
        + "async def outer():\n"
        f"    async with await Staffroom.open({str(work / 'data')!r}, "
        f"project_dir={str(work / 'proj')!r}) as staff:\n"
        "        await main(staff)\nasyncio.run(outer())\n"
    )
    return _spawn([sys.executable, "-c", program], work, dict(os.environ), None)


def _spawn(cmd: list[str], work: Path, env: dict[str, str], stdin: str | None) -> Ran:
    start = time.perf_counter()
    try:
        done = subprocess.run(
            cmd, cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
        return Ran(None, out, "", time.perf_counter() - start)
    return Ran(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)


def project(work: Path) -> Path:
    proj = work / "proj"
    for part in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / part, proj / part)
    shutil.copy(ROOT / "models.yaml", proj / "models.yaml")
    return proj


def scenario(work: Path, name: str, text: str) -> Path:
    path = work / "proj" / "scenarios" / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


SCENARIO = (ROOT / "scenarios" / "tech_article.yaml").read_text("utf-8")


def with_line(old: str, new: str) -> str:
    assert old in SCENARIO, old
    return SCENARIO.replace(old, new)


Verdict = tuple[bool, str]
CASES: list[tuple[str, str, Callable[[Path], Verdict]]] = []


def case(name: str, expected: str) -> Callable[[Callable[[Path], Verdict]], None]:
    def register(fn: Callable[[Path], Verdict]) -> None:
        CASES.append((name, expected, fn))

    return register


def clear_error(ran: Ran, *must: str) -> Verdict:
    """Exit 1 or 2, no traceback, no hang, and the message says what it must."""
    if ran.hung:
        return False, f"hung (> {TIMEOUT:.0f} s)"
    if ran.traceback:
        return False, "traceback: " + ran.text.strip().splitlines()[-1][:80]
    missing = [m for m in must if m.lower() not in ran.text.lower()]
    first = next((ln for ln in ran.err.splitlines() if ln.strip()), ran.out.strip()[:80])
    if ran.rc not in (1, 2) or missing:
        return False, f"exit {ran.rc}, missing {missing}: {first[:90]}"
    return True, f"exit {ran.rc}: {first[:90]}"


def works(ran: Ran, *must: str) -> Verdict:
    if ran.hung:
        return False, f"hung (> {TIMEOUT:.0f} s)"
    missing = [m for m in must if m not in ran.text]
    if ran.rc != 0 or ran.traceback or missing:
        tail = ran.text.strip().splitlines()[-1:] or [""]
        return False, f"exit {ran.rc}, missing {missing}: {tail[0][:90]}"
    return True, f"exit 0 in {ran.seconds:.1f} s"


def log_kinds(work: Path, session: str) -> Counter[str]:
    path = work / "data" / "sessions" / f"{session}.jsonl"
    if not path.exists():
        return Counter()
    return Counter(json.loads(line)["kind"] for line in path.read_text("utf-8").splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=50, help="kill-and-resume trials")
    parser.add_argument("--only", default="", help="run the cases whose name contains this")
    args = parser.parse_args()
    import hostile_cases  # registers the cases (kept apart to stay readable)
    import hostile_state_cases  # noqa: F401  (issue 20's broken states; registers too)

    hostile_cases.TRIALS = args.trials
    failures = 0
    print(f"{'case':<46} {'ok':<4} {'expected':<44} got")
    for name, expected, fn in CASES:
        if args.only not in name:
            continue
        with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
            work = Path(tmp)
            project(work)
            try:
                ok, got = fn(work)
            except Exception as exc:  # a broken case is a failure, not a crash of the table
                ok, got = False, f"case error: {type(exc).__name__}: {exc}"
        failures += not ok
        print(f"{name:<46} {'ok' if ok else 'FAIL':<4} {expected:<44} {got}", flush=True)
    print(f"\n{failures} failing case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, str(Path(__file__).parent))
    sys.modules.setdefault("hostile_input", sys.modules["__main__"])
    raise SystemExit(main())
