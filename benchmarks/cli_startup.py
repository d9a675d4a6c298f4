"""How long does ``staffroom`` take to start, here and at other commits, side by side?

Every command pays the start-up before it does anything, and so did every test that ran the CLI
in a subprocess. Each command is run ``--runs`` times in a fresh interpreter for both trees,
alternating (so a load spike from other work hits both), and the median wall time is printed,
with whether the command imported langgraph or langchain.

    .venv/bin/python benchmarks/cli_startup.py               # this tree vs i22-base
    .venv/bin/python benchmarks/cli_startup.py --ref main --runs 21
    .venv/bin/python benchmarks/cli_startup.py --ref i22-base --ref HEAD   # and before a change

Each other tree is ``git archive REF`` unpacked in a temporary folder and run with the same
interpreter (its own code first on ``PYTHONPATH``), so all see the same installed packages.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# `--help`, and commands that need no runtime (they read files and print).
COMMANDS: list[list[str]] = [
    ["--help"],
    ["validate", "scenarios/escalation.yaml"],
    ["sop", "--help"],
    ["doctor", "--help"],
]
# Printed by the child after its command: did it load the LangGraph runtime?
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.__stderr__.write('\\nHEAVY=%d\\n' % any("
    "m.split('.')[0] in ('langgraph', 'langchain_core') for m in sys.modules)))\n"
    "sys.argv = ['staffroom', *sys.argv[1:]]\n"
    "from framework.surfaces.cli import main\n"
    "main()\n"
)


def unpack(ref: str, into: Path) -> Path:
    """The tree at ``ref`` (a commit, branch or tag of this repository) under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / "tree.tar"
    with archive.open("wb") as out:
        subprocess.run(["git", "-C", str(ROOT), "archive", ref], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def run_once(tree: Path, args: list[str], data: Path) -> tuple[float, bool]:
    """One command in a fresh interpreter: (seconds, imported langgraph/langchain)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    env.update(PYTHONPATH=str(tree), STAFFROOM_HOME=str(data))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tree, env=env, capture_output=True, text=True
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {tree}:\n{done.stderr[-2000:]}")
    return took, "HEAVY=1" in done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--ref", action="append", help="git ref to compare with (repeatable; default: i22-base)"
    )
    parser.add_argument("--runs", type=int, default=11, help="runs per command and tree")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"this tree": ROOT}
        for n, ref in enumerate(opts.ref or ["i22-base"]):
            trees[ref] = unpack(ref, Path(tmp) / str(n))
        data = Path(tmp) / "data"
        print(f"{opts.runs} runs each, median seconds (heavy: langgraph/langchain imported)")
        print(f"{'command':32} " + " ".join(f"{name:>22}" for name in trees))
        for args in COMMANDS:
            times: dict[str, list[float]] = {name: [] for name in trees}
            heavy: dict[str, bool] = {}
            for _ in range(opts.runs):
                for name, tree in trees.items():
                    took, heavy[name] = run_once(tree, args, data)
                    times[name].append(took)
            cells = [
                f"{statistics.median(times[n]):>8.3f}s {'heavy' if heavy[n] else 'light':>5}"
                for n in trees
            ]
            print(f"{' '.join(args):32} " + " ".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
