"""SOP revisions people can follow (issue 21, item 6): random weeks of feedback, checked.

Three people give random feedback (structured corrections of every kind, bare scores,
nothing) on the version their room runs; after each run the rules propose the next version
as a draft; now and then a reviewer approves and publishes the open draft (which starts a
trial). It prints, over every revision:

- the most open drafts an SOP ever had at once (the promise: 1);
- removals proposed that no run asked for (the promise: 0), and removals from score-only runs;
- reasons whose run count differs from the runs that asked (the promise: 0);
- conflicts reported, by kind (opposites, placements, circles, held removals);
- the time a revision takes (median and worst, ms).

    .venv/bin/python benchmarks/sop_revisions.py [--weeks 20] [--runs 12] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

from framework.sop.claims import resolve, step_key
from framework.sop.edits import apply_edits
from framework.sop.model import Correction, Outcome, SopVersion, Status, Step
from framework.sop.proposals import Revision
from framework.sop.service import SopService
from framework.sop.store import SopStore

PEOPLE = ("maria", "bob", "carol")
START = tuple(Step((who,), do) for who, do in [
    ("triage", "read the ticket"), ("engineer", "reproduce"), ("engineer", "diagnose"),
    ("lead", "reply to the customer"), ("lead", "close the ticket"),
])  # fmt: skip
EXTRA = [Step(("engineer",), "check the logs"), Step(("lead",), "notify the account owner")]


def feedback(rng: random.Random, steps: tuple[Step, ...], who: str) -> list[Correction]:
    """One person's feedback on a run of ``steps``: nothing, a bare score, or a correction."""
    n = len(steps)
    pick = rng.random()
    if pick < 0.3:
        return []  # a bare score, or nothing at all
    if pick < 0.6:
        a, b = rng.sample(range(1, n + 1), 2)
        hi, lo = max(a, b), min(a, b)
        return [Correction("order", "", step=hi, before=lo, by=who, confirmed=rng.random() < 0.5)]
    if pick < 0.8:
        new = rng.choice(EXTRA)
        before = rng.choice([None, *range(1, n + 1)])
        return [Correction("missing", "", speaker=new.speakers[0], do=new.do, before=before,
                           by=who)]  # fmt: skip
    if pick < 0.9 and n > 2:
        return [Correction("extra", "", step=rng.randint(1, n), by=who)]
    return [Correction("edit", "", step=rng.randint(1, n), do="reproduce it twice", by=who)]


async def week(seed: int, runs: int, root: Path, tally: dict[str, list[float]]) -> None:
    rng = random.Random(seed)
    service = SopService(await SopStore.open(root / f"w{seed}.sqlite"))
    store = service.store
    try:
        await store.add_version(
            SopVersion("esc", 1, "escalate", "scenario:esc", START, status=Status.PUBLISHED)
        )
        for n in range(runs):
            who = PEOPLE[n % len(PEOPLE)]
            running = await service.best("esc")
            said = tuple(feedback(rng, running.steps, who))
            score = rng.choice([None, 0.2, 0.4, 0.8, 1.0])
            outcome = Outcome(running.ref, f"room:{seed}-{n}", success=not said, score=score,
                              corrections=said, user=who)  # fmt: skip
            await store.record_outcome(outcome)
            began = time.perf_counter()
            revision = await service.revise(running, reviewers=["lead"])
            tally["ms"].append((time.perf_counter() - began) * 1000)
            versions = await store.versions("esc")
            tally["open drafts"].append(sum(v.status == Status.DRAFT for v in versions))
            if revision is None:
                continue
            for line in revision.conflicts:
                kind = ("circle" if "circle" in line else "placement" if "where to add" in line
                        else "held" if line.startswith("held") else "not again"
                        if "not proposed again" in line else "opposite")  # fmt: skip
                tally[f"conflict: {kind}"].append(1)
            await check(service, revision, running, tally)
            if revision.ops and revision.version.status == Status.DRAFT and rng.random() < 0.4:
                await store.approve("esc", revision.version.version, "lead")
                await service.publish("esc", revision.version.version)
                await service.judge_trials("esc")
    finally:
        await service.close()


async def check(
    service: SopService, revision: Revision, running: SopVersion, tally: dict[str, list[float]]
) -> None:
    """Removals nobody asked for, and reasons counting more runs than asked at all."""
    evidence = await service.evidence("esc")
    asked_to_drop: set[str] = set()
    asking_runs = 0
    for o in evidence.outcomes:
        claims = [resolve(c, evidence.steps_of[o.sop_ref]) for c in o.corrections]
        asked_to_drop |= {c.subject for c in claims if c is not None and c.kind == "drop"}
        asking_runs += any(c is not None for c in claims)
    ref = revision.supersedes  # the ops apply to the open draft it retired, else the run's
    steps = (await service.store.get("esc", int(ref.split("@")[1]))).steps if ref else running.steps
    for op in revision.ops:
        tally["ops"].append(1)
        if op.op == "remove":
            tally["removals"].append(1)
            asked = step_key(steps[op.index]) in asked_to_drop
            if not asked and "before the dispute" not in op.reason:
                tally["unasked removals"].append(1)
        counted = re.match(r"(\d+) runs?", op.reason)
        if counted and int(counted.group(1)) > asking_runs:
            tally["reasons over-counting"].append(1)
        steps = apply_edits(steps, [op])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=20)
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    tally: dict[str, list[float]] = {k: [] for k in (
        "ms", "open drafts", "ops", "removals", "unasked removals", "reasons over-counting",
        "conflict: opposite", "conflict: placement", "conflict: circle", "conflict: held",
        "conflict: not again")}  # fmt: skip

    async def all_weeks() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            for seed in range(args.seed, args.seed + args.weeks):
                await week(seed, args.runs, Path(tmp), tally)

    asyncio.run(all_weeks())
    print(f"sop revisions: {args.weeks} weeks x {args.runs} runs, 3 people, seed {args.seed}")
    print(f"revisions: {len(tally['ms'])}, edit ops: {len(tally['ops'])}")
    print(f"most open drafts at once: {max(tally['open drafts'])} (promise: 1)")
    print(f"removals: {len(tally['removals'])}, of them asked by nobody: "
          f"{len(tally['unasked removals'])} (promise: 0)")  # fmt: skip
    print(f"reasons counting more runs than asked: {len(tally['reasons over-counting'])}")
    for kind in ("opposite", "placement", "circle", "held", "not again"):
        print(f"conflicts reported, {kind}: {len(tally['conflict: ' + kind])}")
    ms = tally["ms"]
    print(f"revision time: median {statistics.median(ms):.1f} ms, worst {max(ms):.1f} ms")


if __name__ == "__main__":
    main()
