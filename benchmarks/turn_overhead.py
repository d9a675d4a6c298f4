"""What the framework itself costs per post, against what the model costs.

    .venv/bin/python benchmarks/turn_overhead.py                 # simulator: ms per post
    .venv/bin/python benchmarks/turn_overhead.py --profile       # ... and where the time goes
    .venv/bin/python benchmarks/turn_overhead.py --url http://127.0.0.1:8080/v1 --posts 5
                                                                 # a real server: framework vs model
    .venv/bin/python benchmarks/turn_overhead.py --compare /path/to/old/checkout --rounds 3
                                                                 # this tree vs another, interleaved

A post is what a chat bot does per user message: ``dm.post()`` stores the human message,
builds the prompt, calls the model, runs tools, and stores the reply. With the offline
simulator (a deterministic test double that answers in microseconds) the whole wall time is
the framework's. With a real server, each reply's ``meta.usage.model_s`` is the time spent
inside model calls, measured around them by the turn; the rest of the post's wall time is the
framework's. Background consolidation is off, so each post measures one reply.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from framework import EventKind, Settings, Staffroom

ROOT = Path(__file__).resolve().parents[1]
LINES = ["今天的计划？", "Can you outline a launch plan?", "好的，再细化一下第二点。", "谢谢"]


async def measure(settings: Settings, posts: int, warmup: int) -> list[tuple[float, float]]:
    """``(wall seconds, model seconds)`` per post, after ``warmup`` unmeasured posts."""
    out: list[tuple[float, float]] = []
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("pm", "bench")
        for i in range(warmup + posts):
            started = time.perf_counter()
            model_s = 0.0
            async for event in dm.post(LINES[i % len(LINES)], author="bench"):
                if event.kind == EventKind.MESSAGE and "usage" in event.meta:
                    model_s += float(event.meta["usage"]["model_s"])
            if i >= warmup:
                out.append((time.perf_counter() - started, model_s))
    return out


def report(samples: list[tuple[float, float]], real: bool) -> None:
    walls = [w * 1000 for w, _ in samples]
    print(f"posts: {len(samples)}")
    print(
        f"wall per post: median {statistics.median(walls):.2f} ms, "
        f"p90 {sorted(walls)[int(len(walls) * 0.9) - 1]:.2f} ms, min {min(walls):.2f} ms"
    )
    if real:
        model = [m * 1000 for _, m in samples]
        framework = [w - m for w, m in zip(walls, model, strict=True)]
        share = sum(framework) / sum(walls)
        print(f"model per post: median {statistics.median(model):.0f} ms")
        print(
            f"framework per post: median {statistics.median(framework):.1f} ms "
            f"({share:.2%} of the wall time)"
        )


def compare(other: Path, rounds: int, posts: int) -> None:
    """Run this tree and ``other`` alternately (each in its own process), medians side by side.

    ``other`` is a checkout of another commit; it runs with its own package and project files.
    """
    results: dict[str, list[float]] = {"this": [], "other": []}
    for _ in range(rounds):
        for side, tree in (("this", ROOT), ("other", other)):
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run(
                [sys.executable, __file__, "--posts", str(posts), "--project", str(tree), "--json"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            results[side].append(json.loads(out.stdout.strip().splitlines()[-1])["median_ms"])
    for side, medians in results.items():
        shown = ", ".join(f"{m:.2f}" for m in medians)
        print(f"{side:>5}: median ms per post by round: {shown}")
    ratios = [a / b for a, b in zip(results["this"], results["other"], strict=True)]
    print("this / other by round: " + ", ".join(f"{r:.2f}x" for r in ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--url", help="an OpenAI-compatible server (else the simulator)")
    parser.add_argument("--name", default="gemma-3-270m")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--project", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--compare", type=Path, help="another checkout to measure alternately")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.compare:
        compare(args.compare.resolve(), args.rounds, args.posts)
        return
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp), project_dir=args.project, consolidate_in_background=False
        )
        if args.url:
            from framework.specs.models_file import parse_model_option

            spec = parse_model_option(
                f"{{provider: openai, name: {args.name}, base_url: '{args.url}', "
                "context_window: 4096, max_output_tokens: 64, system_role: fold}",
                where="--url",
            )
            settings = settings.model_copy(update={"model_override": spec})
        profiler = cProfile.Profile() if args.profile else None
        if profiler:
            profiler.enable()
        samples = asyncio.run(measure(settings, args.posts, args.warmup))
        if profiler:
            profiler.disable()
        if args.json:
            walls = [w * 1000 for w, _ in samples]
            print(json.dumps({"median_ms": statistics.median(walls)}))
            return
        report(samples, real=bool(args.url))
        if profiler:
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
