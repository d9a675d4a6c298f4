"""Benchmark: does the SOP converge on what the group wants? A measured learning loop, offline.

Run: ``.venv/bin/python benchmarks/learning_loop.py [--runs 8] [--case NAME]``

Each case has a starting SOP and one or more simulated users (deterministic scripts, not
models), each holding a hidden ideal SOP. Every run happens in a new room on the offline
simulator (a test double): the room runs the best version; when it pauses at a step that
waits for input the user says "继续"; after the run closed the user judges the *whole* run
(what came after the wait too) and posts, as late feedback on that run, one structured
correction per deviation (wrong wording, extra step, order, missing step; see
``corrections_for``) and a score. The score comes from the ground truth (how close the run's
steps came to the user's ideal, difflib's ratio on a 1-5 scale), not from the corrections.

"Converged" is judged against the case's expected SOP (the single user's ideal; for
conflicting users, what the rules promise: agreed changes made, disputed ones as before the
dispute), comparing the best version's steps (speakers, text, waits) after each run: the run
after which it equals the expected SOP and stays so. Each case runs twice, each in a fresh
data folder: feedback on (revisions published at once by the scenario's policy) and feedback
off (outcomes stored, the SOP never revised). Goal: every case converges within 5 runs with
feedback on, and none does with feedback off.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from framework import EventKind, Settings, Staffroom  # noqa: E402

Step = tuple[str, str, bool]  # speaker, what the step does, waits for input
SOP_ID = "loop"


def s(speaker: str, do: str, waits: bool = False) -> Step:
    return (speaker, do, waits)


A = s("pm", "立题与提纲")
B = s("engineer", "技术评估与正文初稿")
C = s("designer", "配图方案")
D = s("reviewer", "合规自检")
E = s("pm", "汇总定稿")
F = s("engineer", "代码示例")
G = s("reviewer", "事实核查")
E_WAIT = s("pm", "汇总定稿", True)


@dataclass(frozen=True)
class Case:
    name: str
    start: list[Step]
    users: list[tuple[str, list[Step]]]
    """(person, their ideal); runs go to them in turn."""
    expected: list[Step] | None = None
    """The SOP the rules should settle on (default: the only user's ideal)."""
    settings: dict[str, Any] = field(default_factory=dict)
    turns: tuple[int, ...] = ()
    """Whose run each run is (indices into ``users``, repeating the last two); default: in turn."""
    silent: frozenset[str] = frozenset()
    """People who only give a score, never a correction."""

    def user(self, n: int) -> tuple[str, list[Step]]:
        if not self.turns:
            return self.users[(n - 1) % len(self.users)]
        if n <= len(self.turns):
            return self.users[self.turns[n - 1]]
        tail = self.turns[-2:]
        return self.users[tail[(n - len(self.turns) - 1) % len(tail)]]

    @property
    def goal(self) -> list[Step]:
        return self.expected if self.expected is not None else self.users[0][1]


IDEAL = [A, B, C, D, E_WAIT]
CASES = [
    Case("article (the first benchmark)", [C, B, A, E_WAIT], [("author", IDEAL)]),
    Case(
        "7-step ideal, 2 missing, order scrambled",
        [E, C, A, F, B],
        [("author", [A, B, F, C, G, D, E])],
    ),
    Case("fully reversed order", [E, D, C, B, A], [("author", [A, B, C, D, E])]),
    Case("one step missing, one that should go", [A, F, B, E], [("author", [A, B, D, E])]),
    Case(
        "new wording extends the old",
        [A, s("engineer", "写正文"), C, E],
        [("author", [A, s("engineer", "写正文并附代码示例"), C, E])],
    ),
    Case(
        "new wording is a substring of the old",
        [A, s("engineer", "技术评估与正文初稿"), C, E],
        [("author", [A, s("engineer", "技术评估"), C, E])],
    ),
    Case(
        "a missing step after the waiting step",
        [A, s("pm", "确认提纲", True), B, E],
        [("author", [A, s("pm", "确认提纲", True), B, D, E])],
    ),
    Case(
        "the waiting step should come earlier",
        [A, B, C, s("pm", "确认方向", True), E],
        [("author", [A, s("pm", "确认方向", True), B, C, E])],
    ),
    Case(
        "edit, extra, order and missing at once, across the wait",
        [C, s("engineer", "写正文"), F, A, E_WAIT],
        [("author", [A, s("engineer", "写正文与代码"), C, E_WAIT, D])],
    ),
    Case(
        "two users, opposite orders, one shared fix",
        [A, B, C, E],
        [("alice", [A, C, B, D, E]), ("bob", [A, B, C, D, E])],
        expected=[A, B, C, D, E],  # the shared fix; the disputed order as before the dispute
    ),
    Case(
        "four users, each wants a different step gone",
        [A, B, C, E],
        [("u1", [B, C, D, E]), ("u2", [A, C, D, E]), ("u3", [A, B, D, E]), ("u4", [A, B, C, D])],
        expected=[A, B, C, D, E],  # the shared fix; no one's removal cuts what others rely on
    ),
    Case(
        "three users, two agree: the majority, not the last speaker",
        [A, B, C, E],
        [("alice", [A, C, B, D, E]), ("bob", [A, B, C, D, E]), ("carol", [A, C, B, D, E])],
        expected=[A, C, B, D, E],
    ),
    Case(
        "one user changes their mind",
        [A, B, C, E],
        [("author", [A, C, B, E])],
        expected=[A, C, B, E],
    ),
]


# One person asks to drop the compliance check; the others rely on it but only say so by
# their scores: 5/5 with it, 2/5 without. The revision is published over the best, so it
# runs as a trial (half the rooms, 3 runs each: the scenario defaults) and is rolled back
# when it does worse.
TRIAL = Case(
    "a trial that regresses",
    [A, B, D, E],
    [("u1", [A, B, E]), ("u2", [A, B, D, E]), ("u3", [A, B, D, E])],
    expected=[A, B, D, E],
    settings={"sop_trial_share": 0.5, "sop_trial_runs": 3},
    turns=(0, 1, 2),
    silent=frozenset({"u2", "u3"}),
)


def key(step: Step) -> tuple[str, str]:
    return step[0], step[1]


def corrections_for(executed: Sequence[Step], ideal: Sequence[Step]) -> list[str]:
    """What a user with ``ideal`` says about a run whose steps were ``executed``.

    Step numbers are the run's. It names every deviation it sees, in the order the
    corrections take effect (``A before B`` puts A right before B): rewordings (a step that
    is not in the ideal, paired with a missing one of the same speaker whose text contains
    it or is contained in it), steps to drop, moves (from the end of the ideal backwards,
    each only if still out of order), then missing steps before the next ideal step the run
    has.
    """
    number = {key(st): n for n, st in enumerate(executed, start=1)}
    wanted = [key(st) for st in ideal]
    missing = [st for st in ideal if key(st) not in number]
    extra = [st for st in executed if key(st) not in wanted]
    lines: list[str] = []
    renamed: dict[tuple[str, str], tuple[str, str]] = {}
    for st in list(extra):
        # The same step said otherwise: same speaker, and one text contains the other.
        twin = next(
            (m for m in missing if m[0] == st[0] and (m[1] in st[1] or st[1] in m[1])), None
        )
        if twin is not None:
            lines.append(f'纠正: edit {number[key(st)]} "{twin[1]}" 措辞要改')
            renamed[key(twin)] = key(st)
            missing.remove(twin)
            extra.remove(st)
    lines += [f"纠正: extra {number[key(st)]} 这一步多余" for st in extra]

    def ran_as(k: tuple[str, str]) -> tuple[str, str] | None:
        k = renamed.get(k, k)
        return k if k in number else None

    present = [k for k in wanted if ran_as(k) is not None]
    work = [key(st) for st in executed if key(st) not in {key(x) for x in extra}]
    for before, after in reversed(list(pairwise(present))):
        a, b = ran_as(before), ran_as(after)
        assert a is not None and b is not None
        if work.index(a) > work.index(b):
            lines.append(f"纠正: order {number[a]} before {number[b]} 顺序不对")
            work.insert(work.index(b), work.pop(work.index(a)))
    for st in missing:
        later = [ran_as(k) for k in wanted[wanted.index(key(st)) + 1 :]]
        anchor = next((k for k in later if k is not None), None)
        where = f" before {number[anchor]}" if anchor is not None else ""
        lines.append(f'纠正: missing {st[0]} "{st[1]}"{where} 漏了这一步')
    return lines


def make_project(folder: Path, case: Case, feedback: bool) -> None:
    shutil.copytree(ROOT / "agents", folder / "agents")
    (folder / "scenarios").mkdir()
    scenario = {
        "id": "loop",
        "title": "学习回路基准",
        "participants": ["pm", "engineer", "designer", "reviewer"],
        "humans": [name for name, _ in case.users],
        "announcement": {"text": "本群目标：完成一篇技术文章。", "sop": "{{ best_sop('loop') }}"},
        # Trials off unless the case says: these cases measure what the revisions converge
        # on; the trial case below measures trials.
        "settings": {
            "sop_feedback": feedback,
            "sop_auto_publish": True,
            "sop_trial_share": 0.0,
            **case.settings,
        },
    }
    (folder / "scenarios" / "loop.yaml").write_text(
        yaml.safe_dump(scenario, allow_unicode=True), encoding="utf-8"
    )
    steps = [{"speaker": sp, "do": do, "waits_for_input": w} for sp, do, w in case.start]
    card = {
        "id": SOP_ID,
        "version": 1,
        "scope": "scenario:loop",
        "goal": "技术文章从立题到定稿",
        "steps": steps,
        "change_log": [{"version": 1, "why": "团队最初的做法", "by": "admin"}],
    }
    (folder / "sop_library" / "loop").mkdir(parents=True)
    text = "---\n" + yaml.safe_dump(card, allow_unicode=True) + "---\n学习回路基准的起点。\n"
    (folder / "sop_library" / "loop" / "v1.md").write_text(text, encoding="utf-8")


@dataclass
class Run:
    version: str
    corrections: int
    right: bool
    """The run's steps equalled its user's ideal (ground truth, not the score)."""
    converged: bool
    """After this run, the best version equals the case's expected SOP."""
    conflicts: int


async def one_run(staff: Staffroom, case: Case, n: int) -> Run:
    user, ideal = case.user(n)
    if case.name == "one user changes their mind" and n == 1:
        ideal = [A, B, s("pm", "先出摘要"), C, E]  # first asks for something else, then not
    room = await staff.room(f"loop-{n:02d}", "loop")
    events = [e async for e in room.start()]
    while not any(e.kind == EventKind.OUTCOME for e in events):
        if events and events[-1].kind != EventKind.WAIT:
            raise RuntimeError(f"run {n} stopped without waiting or ending: {events[-1].kind}")
        events += [e async for e in room.post("继续", author=user)]
    executed = [
        (e.content["speakers"][0], e.content["do"], bool(e.content.get("waits_for_input")))
        for e in events
        if e.kind == EventKind.SOP_STEP
    ]
    lines = [] if user in case.silent else corrections_for(executed, ideal)
    right = executed == ideal
    # The person's score: how close the whole run came to their ideal (difflib's ratio of the
    # two step sequences), on a 1-5 scale; never computed from the corrections.
    close = SequenceMatcher(a=executed, b=ideal, autojunk=False).ratio()
    points = max(1, round(5 * close))
    if user in case.silent:  # those who only score say plainly when it is not what they need
        points = 5 if right else 2
    verdict = f"评分: {points}/5"
    late = [e async for e in room.post("\n".join([*lines, verdict]), author=user)]
    conflicts = sum(
        len(e.content.get("conflicts") or []) for e in late if e.kind == EventKind.REVISION
    )
    # The best version as a new room sees it: with trials off, the best by score over every
    # published version; with trials on, a version on trial does not count until it wins.
    trials = float(case.settings.get("sop_trial_share", 0.0)) > 0
    winner = (await staff.sops.choose(SOP_ID, trials=trials)).winner
    assert winner is not None
    best = winner.version
    now = [(st.speakers[0], st.do, st.waits_for_input) for st in best.steps]
    return Run(str(events[0].content["sop"]), len(lines), right, now == case.goal, conflicts)


async def loop(case: Case, runs: int, feedback: bool) -> list[Run]:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        make_project(project, case, feedback)
        settings = Settings(data_dir=Path(tmp) / "data", project_dir=project, allow_network=False)
        async with await Staffroom.open(settings=settings) as staff:
            return [await one_run(staff, case, n) for n in range(1, runs + 1)]


def converged_at(rows: list[Run]) -> int | None:
    """The run after which the best version equals the expected SOP and stays so."""
    for n in range(len(rows)):
        if all(r.converged for r in rows[n:]):
            return n + 1
    return None


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--case", help="run only the cases whose name contains this")
    parser.add_argument("--verbose", action="store_true", help="print every run")
    args = parser.parse_args()
    cases = [c for c in CASES if not args.case or args.case in c.name]
    print(
        "learning loop: simulated users with hidden ideal SOPs (offline simulator, a test double)"
    )
    print(f"{'case':<58} {'on: converged':>14} {'final=ideal':>11} {'corr.':>5} {'confl.':>6}"
          f" | {'off: converged':>14} {'final=ideal':>11}")  # fmt: skip
    met = True
    for case in cases:
        on = asyncio.run(loop(case, args.runs, feedback=True))
        off = asyncio.run(loop(case, args.runs, feedback=False))
        at_on, at_off = converged_at(on), converged_at(off)
        print(
            f"{case.name:<58} {at_on or 'never'!s:>14} {on[-1].converged!s:>11}"
            f" {sum(r.corrections for r in on):>5} {sum(r.conflicts for r in on):>6}"
            f" | {at_off or 'never'!s:>14} {off[-1].converged!s:>11}"
        )
        if args.verbose:
            for n, r in enumerate(on, start=1):
                print(f"    run {n}: {r.version} corrections {r.corrections} right {r.right}")
        met &= at_on is not None and at_on <= 5 and at_off is None
    print(
        f"goal (every case converges within 5 runs with feedback, none without): "
        f"{'met' if met else 'NOT met'}"
    )
    if not args.case or args.case in TRIAL.name:
        asyncio.run(trial_report(max(args.runs, 12)))


async def trial_report(runs: int) -> None:
    """The trial case, with trials on (the defaults) and off (share 0)."""
    off_case = Case(**{**TRIAL.__dict__, "settings": {"sop_trial_share": 0.0}})
    print(f"\n{TRIAL.name}: {runs} runs; u1 asks once to drop the compliance check, u2 and u3")
    print("rely on it and only score (5/5 with it, 2/5 without)")
    seen: dict[str, tuple[int, bool]] = {}
    for label, case in (("trials on (share 0.5, 3 runs)", TRIAL), ("trials off", off_case)):
        rows, explained = await trial_loop(case, runs)
        bad = sum(1 for r in rows if r.version != "loop@1")
        regressed = sum(1 for r in rows if not r.converged)
        rolled = [line for line in explained if line.startswith("trial:") and "rolled back" in line]
        seen[label] = (regressed, bool(rolled))
        print(
            f"  {label:<30} rooms on the regressing version: {bad:>2}; runs after which it "
            f"was the best: {regressed:>2}; final best = start: {rows[-1].converged}"
        )
        for line in rolled:
            print(f"    sop explain: {line}")
    on_ok = seen["trials on (share 0.5, 3 runs)"] == (0, True)
    off_regressed = seen["trials off"][0] > 0
    verdict = "met" if on_ok and off_regressed else "NOT met"
    print(
        "goal (trials on: the best never regresses and the trial is rolled back; off: the "
        f"regression becomes the best at least once): {verdict}"
    )


async def trial_loop(case: Case, runs: int) -> tuple[list[Run], list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        make_project(project, case, True)
        settings = Settings(data_dir=Path(tmp) / "data", project_dir=project, allow_network=False)
        async with await Staffroom.open(settings=settings) as staff:
            rows = [await one_run(staff, case, n) for n in range(1, runs + 1)]
            return rows, await staff.sops.explain(SOP_ID)


if __name__ == "__main__":
    main()
