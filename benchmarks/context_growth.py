"""Benchmark: does a turn's context stay the same size as a session grows?

Run: ``.venv/bin/python benchmarks/context_growth.py [--turns 2000] [--repeat 30]``

Drives one DM on the offline simulator (a deterministic test double) for ``--turns`` turns
(a person's message and the employee's reply each), with consolidation on as in production.
At turns 100, 500, 1,000 and 2,000 it measures, in this one run:

* the prompt Staffroom builds for the next turn (role card + MEMORY.md + HISTORY.md within its
  budget + the last ``recent_turns`` messages): size in characters and build time (median of
  ``--repeat`` builds, reading everything from disk as a turn does);
* what sending the full history instead would cost: its size, and the time to read the whole
  log and turn it into messages.

Ratios are to turn 100 of the same run (the machine is noisy; absolute times are not the point).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from framework import Settings, Staffroom
from framework.runtime.room import Room
from framework.runtime.turn_context import build_messages, recent_messages

CHECKPOINTS = (100, 500, 1000, 2000)
TOPICS = ("灰度发布", "回滚预案", "监控告警", "容量评估", "接口兼容", "数据迁移", "权限审计")


def _build(room: Room) -> tuple[list[Any], Any]:
    # The turn's own prompt assembly, on the room's internals (a benchmark, not an API).
    deps = room._deps
    return build_messages(deps, deps.sink(), employee="engineer", why="direct", step=None)


def prompt_chars(room: Room) -> int:
    messages, _ = build_messages(
        room._deps, room._deps.sink(), employee="engineer", why="direct", step=None
    )
    return sum(len(str(m.content)) for m in messages)


def full_history(room: Room, repeat: int) -> tuple[int, float]:
    samples, size = [], 0
    for _ in range(max(3, repeat // 5)):
        start = time.perf_counter()
        events = room.history()
        messages = recent_messages(events, "engineer", len(events))
        samples.append(time.perf_counter() - start)
        size = sum(len(str(m.content)) for m in messages)
    return size, statistics.median(samples)


def build_time(room: Room, repeat: int) -> float:
    build_messages(
        room._deps, room._deps.sink(), employee="engineer", why="direct", step=None
    )  # warm caches
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        _build(room)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def run(turns: int, repeat: int, data: Path) -> list[tuple[int, int, float, int, float]]:
    settings = Settings(data_dir=data, project_dir=Path(__file__).resolve().parents[1])
    rows: list[tuple[int, int, float, int, float]] = []
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.dm("engineer", "alice")
        for turn in range(1, turns + 1):
            topic = TOPICS[turn % len(TOPICS)]
            text = f"第 {turn} 轮：{topic}这块还有什么风险？请结合上次的结论给出下一步。"
            async for _ in room.post(text, author="alice"):
                pass
            if turn in CHECKPOINTS:
                await room.drain()  # let background consolidation catch up, as between turns
                size, full_time = full_history(room, repeat)
                rows.append((turn, prompt_chars(room), build_time(room, repeat), size, full_time))
                print(f"  measured turn {turn}", file=sys.stderr)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = asyncio.run(run(args.turns, args.repeat, Path(tmp)))
    base = rows[0]
    print("context per turn, offline simulator (a test double), DM with consolidation on")
    print(
        f"{'turn':>6} {'prompt chars':>13} {'x t100':>7} {'build ms':>9} {'x t100':>7}"
        f" {'full-history chars':>19} {'x t100':>7} {'full read ms':>13} {'x t100':>7}"
    )
    for turn, chars, built, full, full_time in rows:
        print(
            f"{turn:>6} {chars:>13,} {chars / base[1]:>7.2f} {built * 1e3:>9.2f}"
            f" {built / base[2]:>7.2f} {full:>19,} {full / base[3]:>7.2f}"
            f" {full_time * 1e3:>13.2f} {full_time / base[4]:>7.2f}"
        )
    last = rows[-1]
    flat = last[1] / base[1] <= 1.2 and last[2] / base[2] <= 1.2
    print(
        f"goal (prompt size and build time within 1.2x of turn 100 at turn {last[0]}): "
        f"{'met' if flat else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
