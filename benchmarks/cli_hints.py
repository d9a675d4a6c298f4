"""What carrying the options into printed hints costs a command (see cli/hints.py).

Each command that prints hints builds the CLI's command tree once (``typer.main.get_command``,
to know which options each hinted command takes) and passes every printed line through
``Invocation.carry``. This times both, and a transcript of N lines printed through the hint
console against a plain rich console, to a null file.

    .venv/bin/python benchmarks/cli_hints.py [--lines 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from rich.console import Console

from framework.surfaces.cli import _commands
from framework.surfaces.cli.hints import HintConsole, Invocation

LINE = "[dim]… 1234 more characters: staffroom history room:escalation-1 --json[/]"
PLAIN = "产品经理小P (SOP step 1) [black on yellow] simulated [/]: done with the outline."


def best(seconds: list[float]) -> float:
    return min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    tree: list[float] = []
    for _ in range(args.repeat):
        _commands.cache_clear()
        start = time.perf_counter()
        _commands()
        tree.append(time.perf_counter() - start)
    hints = Invocation(Path("/srv/team/.staffroom"), Path("/srv/team"), "local", _commands)

    carry: list[float] = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        for _ in range(args.lines):
            hints.carry(LINE, markup=True)
        carry.append((time.perf_counter() - start) / args.lines)

    def transcript(console: Console) -> float:
        start = time.perf_counter()
        for index in range(args.lines):
            console.print(LINE if index % 10 == 0 else PLAIN)
        return time.perf_counter() - start

    plain = best(
        [transcript(Console(file=io.StringIO(), soft_wrap=True)) for _ in range(args.repeat)]
    )
    hinted = best([transcript(HintConsole(hints, file=io.StringIO())) for _ in range(args.repeat)])
    print(
        "command tree, built once when a command prints its first hint: "
        f"{best(tree) * 1000:.1f} ms (best of {args.repeat})"
    )
    print(f"carry() on a line with a hint: {best(carry) * 1e6:.1f} µs")
    print(
        f"transcript of {args.lines} lines (1 in 10 a hint): plain console {plain * 1000:.0f} ms, "
        f"hint console {hinted * 1000:.0f} ms ({hinted / plain:.2f}x)"
    )


if __name__ == "__main__":
    main()
