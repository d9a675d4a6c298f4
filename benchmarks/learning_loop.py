"""Benchmark: does the SOP get better with use? A measured learning loop, offline.

Run: ``.venv/bin/python benchmarks/learning_loop.py [--runs 10]``

A simulated user (a deterministic script, not a model) holds a hidden ideal SOP for a
technical-article room and watches each run: at the final review it posts one structured
correction per deviation it sees (every missing step, and the first step out of order) and a
score. The room runs on the offline simulator (a test double). The same 10 runs happen twice,
each in a fresh data folder:

* feedback on: after each run the outcome's corrections become edit operations, and the
  revised version is published at once (the scenario's policy), so the next run uses it;
* feedback off: outcomes are stored but the SOP is never revised.

It prints, per run, the SOP version used, the corrections made and whether the run succeeded.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from framework import EventKind, Settings, Staffroom  # noqa: E402

IDEAL = [
    ("pm", "立题与提纲"),
    ("engineer", "技术评估与正文初稿"),
    ("designer", "配图方案"),
    ("reviewer", "合规自检"),
    ("pm", "汇总定稿"),
]
# Where the team starts: figures before the outline, the outline last, no compliance check.
START = [
    {"speaker": "designer", "do": "配图方案"},
    {"speaker": "engineer", "do": "技术评估与正文初稿"},
    {"speaker": "pm", "do": "立题与提纲"},
    {"speaker": "pm", "do": "汇总定稿", "waits_for_input": True},
]


def make_project(folder: Path, feedback: bool) -> None:
    shutil.copytree(ROOT / "agents", folder / "agents")
    (folder / "scenarios").mkdir()
    scenario = {
        "id": "article-loop",
        "title": "技术文章（学习回路基准）",
        "participants": ["pm", "engineer", "designer", "reviewer"],
        "humans": ["author"],
        "announcement": {
            "text": "本群目标：完成一篇技术文章。",
            "sop": "{{ best_sop('article-loop') }}",
        },
        "settings": {"sop_feedback": feedback, "sop_auto_publish": True},
    }
    (folder / "scenarios" / "article_loop.yaml").write_text(
        yaml.safe_dump(scenario, allow_unicode=True), encoding="utf-8"
    )
    card = {
        "id": "article-loop",
        "version": 1,
        "scope": "scenario:article-loop",
        "goal": "技术文章从立题到定稿",
        "steps": START,
        "change_log": [{"version": 1, "why": "团队最初的做法", "by": "admin"}],
    }
    (folder / "sop_library" / "article_loop").mkdir(parents=True)
    text = "---\n" + yaml.safe_dump(card, allow_unicode=True) + "---\n学习回路基准的起点。\n"
    (folder / "sop_library" / "article_loop" / "v1.md").write_text(text, encoding="utf-8")


def corrections_for(executed: list[tuple[str, str]]) -> list[str]:
    """What the simulated user says about a run whose steps were ``executed``."""
    lines: list[str] = []
    for i, (speaker, do) in enumerate(IDEAL):
        if (speaker, do) in executed:
            continue
        following = [s for s in IDEAL[i + 1 :] if s in executed]
        before = f" before {executed.index(following[0]) + 1}" if following else ""
        lines.append(f'纠正: missing {speaker} "{do}"{before} 漏了这一步')
    present = [s for s in IDEAL if s in executed]
    in_run = [s for s in executed if s in IDEAL]
    for want, got in zip(present, in_run, strict=True):
        if want != got:
            step, before = executed.index(want) + 1, executed.index(got) + 1
            lines.append(f"纠正: order {step} before {before} 应该先{want[1]}")
            break
    return lines


async def one_run(staff: Staffroom, n: int) -> tuple[str, int, bool]:
    room = await staff.room(f"loop-{n:02d}", "article-loop")
    events = [e async for e in room.start()]
    executed = [
        (e.content["speakers"][0], e.content["do"]) for e in events if e.kind == EventKind.SOP_STEP
    ]
    lines = corrections_for(executed)
    verdict = "评分: 5/5 很好" if not lines else "评分: 2/5 流程不对"
    async for _ in room.post("\n".join([*lines, verdict]), author="author"):
        pass
    outcome = next(e for e in reversed(room.history()) if e.kind == EventKind.FEEDBACK)
    return str(events[0].content["sop"]), len(lines), bool(outcome.content["success"])


async def loop(runs: int, feedback: bool) -> list[tuple[str, int, bool]]:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        make_project(project, feedback)
        settings = Settings(data_dir=Path(tmp) / "data", project_dir=project, allow_network=False)
        async with await Staffroom.open(settings=settings) as staff:
            return [await one_run(staff, n) for n in range(1, runs + 1)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    on = asyncio.run(loop(args.runs, feedback=True))
    off = asyncio.run(loop(args.runs, feedback=False))
    print(
        "learning loop: simulated user with a hidden ideal SOP (offline simulator, a test double)"
    )
    print(
        f"{'run':>4} | {'feedback on: SOP':<16} {'corrections':>11} {'success':>8} |"
        f" {'feedback off: SOP':<17} {'corrections':>11} {'success':>8}"
    )
    for n, ((v1, c1, s1), (v2, c2, s2)) in enumerate(zip(on, off, strict=True), start=1):
        print(f"{n:>4} | {v1:<16} {c1:>11} {s1!s:>8} | {v2:<17} {c2:>11} {s2!s:>8}")
    for label, rows in (("on", on), ("off", off)):
        rate = sum(1 for _, _, ok in rows if ok) / len(rows)
        first_zero = next((i for i, (_, c, _) in enumerate(rows, start=1) if c == 0), None)
        print(
            f"feedback {label}: success rate {rate:.0%}, corrections {sum(c for _, c, _ in rows)},"
            f" first run with no correction: {first_zero or 'never'}"
        )
    fell = any(c == 0 for _, c, _ in on[:5]) and all(c == 0 for _, c, _ in on[5:])
    flat = all(c == off[0][1] for _, c, _ in off) and off[0][1] > 0
    print(
        f"goal (on: zero corrections within 5 runs and after; off: flat): "
        f"{'met' if fell and flat else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
