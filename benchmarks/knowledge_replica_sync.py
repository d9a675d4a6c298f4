"""Benchmark: what a knowledge search costs on a replica's own index, against the shared file.

Run: ``.venv/bin/python benchmarks/knowledge_replica_sync.py [--sizes 10x20x60,50x40x200]``

Each size is employees x topic files each x journal days each, written into a fresh data
folder as short markdown files and dated an hour back (no file is "racily clean": each search
trusts their mtime and size, as it would a day later). Then one employee searches, twenty-one
times, through ``KnowledgeBase.search``:

* the shared index file (``index/knowledge.sqlite``, no database): each search syncs that
  employee's folders and the library;
* a replica's own index (``own_index``, what a replica on a database keeps in memory): each
  search syncs every folder of the partition, so the scores depend on the files alone.

Reported: the first search (which builds the index: segmenting every file it syncs) and the
median of the next twenty.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from framework.knowledge.base import KnowledgeBase

VOCABULARY = "部署 灰度 发布 回滚 审批 预算 评审 客户 需求 测试 上线 监控 告警 集群 版本"
WORDS = VOCABULARY.split()
RUNS = 20


def write_files(root: Path, employees: int, topics: int, days: int) -> int:
    """Topic files and journal days for every employee, dated an hour back; how many."""
    written: list[Path] = []
    for e in range(employees):
        for t in range(topics):
            path = root / "knowledge" / f"e{e}" / "learning" / f"t{t}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"- {WORDS[(e + t) % 15]} {WORDS[t * 7 % 15]} 第{t}条\n", "utf-8")
            written.append(path)
        for d in range(days):
            path = root / "journals" / f"e{e}" / f"2026-{1 + d // 28:02d}-{1 + d % 28:02d}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            body = f"# Journal\n\n## 10:00 dm:a@e{e} (entry x{d})\n- note: {WORDS[d % 15]}\n"
            path.write_text(body, "utf-8")
            written.append(path)
    hour_ago = time.time() - 3600
    for path in written:
        os.utime(path, (hour_ago, hour_ago))
    return len(written)


async def timed(root: Path, own_index: bool) -> tuple[float, float]:
    """The first search and the median of the next ones, in ms."""
    kb = KnowledgeBase(root, own_index=own_index)
    try:
        times = []
        for _ in range(RUNS + 1):
            started = time.perf_counter()
            await kb.search("部署 回滚", employee="e0")
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await kb.close()
    return times[0], statistics.median(times[1:])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10x20x60,50x40x200")
    args = parser.parse_args()
    print(
        "| employees | knowledge files | shared index file: first / p50 | own index: first / p50 |"
    )
    print("|---:|---:|---:|---:|")
    for size in args.sizes.split(","):
        employees, topics, days = (int(n) for n in size.split("x"))
        with tempfile.TemporaryDirectory() as tmp:
            files = write_files(Path(tmp), employees, topics, days)
            shared = await timed(Path(tmp), own_index=False)
            own = await timed(Path(tmp), own_index=True)
        print(
            f"| {employees} | {files:,} | {shared[0]:,.0f} ms / {shared[1]:.1f} ms "
            f"| {own[0]:,.0f} ms / {own[1]:.1f} ms |"
        )


if __name__ == "__main__":
    asyncio.run(main())
