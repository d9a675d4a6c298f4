"""Trials: a version published over the best serves a share of rooms, then is judged."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from framework.sop.model import Correction, Outcome, SopVersion, Status, Step
from framework.sop.service import SopService
from framework.sop.trials import Record, TrialPolicy, in_trial, judge

STEPS = (Step(("pm",), "提纲"), Step(("engineer",), "评估"), Step(("designer",), "配图"))
V1 = SopVersion("tech-article", 1, "写文章", "scenario:tech-article", STEPS, Status.PUBLISHED)
FIX = Correction("order", "先配图", step=3, before=2)
POLICY = TrialPolicy(share=0.5, runs=3)


def rooms(share: float, *, trial: bool, n: int) -> list[str]:
    """The first ``n`` room keys that land on the trial's side (or the best's) of @2."""
    keys = (f"room:r{i}" for i in range(10_000))
    return [k for k in keys if in_trial("tech-article@2", k, share) == trial][:n]


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[SopService]:
    opened = await SopService.open(tmp_path / "data")
    await opened.store.add_version(V1)
    yield opened
    await opened.close()


async def publish_v2(service: SopService) -> None:
    """@2 (steps reordered), approved and published over @1: a trial starts."""
    await service.store.add_version(replace(V1, version=2, steps=STEPS[::-1], status=Status.DRAFT))
    await service.store.approve("tech-article", 2, "alice")
    await service.publish("tech-article", 2)


async def run(service: SopService, ref: str, room: str, *, ok: bool, corrections: int = 0) -> None:
    outcome = Outcome(ref, room, success=ok, corrections=(FIX,) * corrections)
    await service.store.record_outcome(outcome)


def test_judge_waits_for_enough_runs_on_both_sides() -> None:
    def verdict(trial: Record, best: Record) -> object:
        return judge(trial, best, trial_ref="s@2", best_ref="s@1", runs=3)

    assert verdict(Record(3, 3, 0), Record(2, 2, 0)) is None
    assert verdict(Record(2, 2, 0), Record(9, 0, 9)) is None
    assert verdict(Record(3, 3, 0), Record(3, 3, 0)) is not None


@pytest.mark.parametrize(
    ("trial", "best", "promote"),
    [
        (Record(3, 2, 0), Record(3, 3, 0), False),  # lower success rate
        (Record(3, 3, 2), Record(3, 3, 1), False),  # same success, more corrections per run
        (Record(3, 3, 1), Record(3, 3, 1), True),  # as well: the newer version wins
        (Record(3, 2, 0), Record(6, 4, 0), True),  # 2/3 == 4/6 exactly: no float noise
        (Record(4, 4, 3), Record(3, 2, 0), True),  # better success outweighs corrections
    ],
)
def test_judge_compares_success_then_corrections(
    trial: Record, best: Record, promote: bool
) -> None:
    verdict = judge(trial, best, trial_ref="s@2", best_ref="s@1", runs=3)
    assert verdict is not None and verdict.promote is promote
    assert ("rolled back" in verdict.reason) is not promote
    assert f"s@2 success {trial.successes}/{trial.runs}" in verdict.reason


def test_rooms_are_assigned_by_a_stable_hash_in_the_set_share() -> None:
    keys = [f"room:r{i}" for i in range(2000)]
    picked = [k for k in keys if in_trial("tech-article@2", k, 0.5)]
    assert 900 < len(picked) < 1100
    assert picked == [k for k in keys if in_trial("tech-article@2", k, 0.5)]  # same again
    assert not any(in_trial("tech-article@2", k, 0.0) for k in keys)
    # Another trial draws other rooms.
    assert picked != [k for k in keys if in_trial("tech-article@3", k, 0.5)]


async def test_a_version_published_over_the_best_runs_as_a_trial(service: SopService) -> None:
    await publish_v2(service)
    (trial,) = await service.store.trials("tech-article")
    assert trial.ref == "tech-article@2" and trial.open
    # The best stays @1 for everything that is not a room's assignment.
    assert (await service.best("tech-article")).version == 1
    lines = await service.explain("tech-article")
    assert lines[0].startswith("tech-article@1 wins")
    assert any("tech-article@2 [ineligible: on trial since" in line for line in lines)
    assert any(line.startswith("trial: tech-article@2 against tech-article@1") for line in lines)

    on_trial = await service.for_room("tech-article", rooms(0.5, trial=True, n=1)[0], POLICY)
    assert on_trial.version.ref == "tech-article@2"
    assert on_trial.record() == {
        "arm": "trial",
        "trial": "tech-article@2",
        "best": "tech-article@1",
        "share": 0.5,
    }
    on_best = await service.for_room("tech-article", rooms(0.5, trial=False, n=1)[0], POLICY)
    assert on_best.version.ref == "tech-article@1" and on_best.arm == "best"


async def test_a_trial_that_does_worse_is_rolled_back(service: SopService) -> None:
    await publish_v2(service)
    for i, room in enumerate(rooms(0.5, trial=True, n=3)):
        await run(service, "tech-article@2", room, ok=i == 0, corrections=1)
    for room in rooms(0.5, trial=False, n=2):
        await run(service, "tech-article@1", room, ok=True)
    assert await service.judge_trials("tech-article", POLICY) is None  # @1 has 2 runs of 3
    await run(service, "tech-article@1", rooms(0.5, trial=False, n=3)[2], ok=True)

    # The next room's entry judges: @2 did worse, so it is retired and @1 keeps serving.
    got = await service.for_room("tech-article", rooms(0.5, trial=True, n=4)[3], POLICY)
    assert got.version.ref == "tech-article@1" and got.record() is None
    v2 = await service.store.get("tech-article", 2)
    assert v2.status is Status.DEPRECATED
    why = v2.change_log[-1].why
    assert why.startswith("deprecated: rolled back after a trial against tech-article@1")
    assert "success 1/3, 1.0 corrections per run vs tech-article@1 success 3/3" in why
    (trial,) = await service.store.trials("tech-article")
    assert trial.verdict == "rolled back" and not trial.open
    lines = await service.explain("tech-article")
    assert any("tech-article@2 [ineligible: deprecated (rolled back" in line for line in lines)
    assert any(line.startswith("trial: tech-article@2 rolled back at") for line in lines)


async def test_a_trial_that_does_as_well_becomes_the_best(service: SopService) -> None:
    await publish_v2(service)
    for room in rooms(0.5, trial=True, n=3):
        await run(service, "tech-article@2", room, ok=True)
    for room in rooms(0.5, trial=False, n=3):
        await run(service, "tech-article@1", room, ok=True)
    verdict = await service.judge_trials("tech-article", POLICY)
    assert verdict is not None and verdict.promote
    assert (await service.best("tech-article")).version == 2
    v1 = await service.store.get("tech-article", 1)
    assert v1.status is Status.DEPRECATED
    assert "superseded by tech-article@2, which won a trial" in v1.change_log[-1].why
    assert (
        "won a trial against tech-article@1"
        in (await service.store.get("tech-article", 2)).change_log[-1].why
    )
    # The trial is over: every room gets @2 and none records a trial.
    for room in rooms(0.5, trial=False, n=3):
        got = await service.for_room("tech-article", room, POLICY)
        assert got.version.ref == "tech-article@2" and got.record() is None
    assert await service.judge_trials("tech-article", POLICY) is None  # judged once


async def test_runs_before_the_trial_began_do_not_count(service: SopService) -> None:
    for i in range(3):  # @1's record before @2 existed
        await run(service, "tech-article@1", f"room:old{i}", ok=False, corrections=2)
    await publish_v2(service)
    for room in rooms(0.5, trial=True, n=3):
        await run(service, "tech-article@2", room, ok=True, corrections=1)
    # @1's old failures would make @2 look better; only runs during the trial compare.
    assert await service.judge_trials("tech-article", POLICY) is None


async def test_publishing_again_during_a_trial_ends_it_unjudged(service: SopService) -> None:
    await publish_v2(service)
    v3 = replace(V1, version=3, steps=(STEPS[1], STEPS[0], STEPS[2]), status=Status.DRAFT)
    await service.store.add_version(v3)
    await service.store.approve("tech-article", 3, "alice")
    await service.publish("tech-article", 3)
    first, second = await service.store.trials("tech-article")
    assert first.verdict == "ended" and "tech-article@3 was published" in (first.reason or "")
    assert second.ref == "tech-article@3" and second.open


async def test_share_zero_turns_trials_off_for_a_scenario(service: SopService) -> None:
    await publish_v2(service)
    off = TrialPolicy(share=0.0, runs=3)
    # The best by score over every published version: untried @2 (prior 0.5) vs untried @1.
    chosen = {
        (await service.for_room("tech-article", k, off)).version.ref
        for k in rooms(0.5, trial=True, n=5)
    }
    assert chosen == {"tech-article@2"}  # a tie goes to the higher version, as before trials


async def test_a_trial_version_retired_by_hand_ends_its_trial(service: SopService) -> None:
    await publish_v2(service)
    await service.store.deprecate("tech-article", 2, "试用后回退")
    got = await service.for_room("tech-article", rooms(0.5, trial=True, n=1)[0], POLICY)
    assert got.version.ref == "tech-article@1" and got.record() is None
    (trial,) = await service.store.trials("tech-article")
    assert trial.verdict == "ended" and "deprecated during the trial" in (trial.reason or "")
