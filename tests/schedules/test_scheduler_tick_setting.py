"""The scheduler's tick: ``Settings.scheduler_tick`` / ``$STAFFROOM_SCHEDULER_TICK`` sets how
often `staffroom serve`'s scheduler ticks (and `schedules run`'s default), and a fire's claim
lasts 12 ticks, so a faster tick also takes over a dead scheduler's fires sooner."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework import Settings, Staffroom
from framework.errors import InputError
from framework.schedules.fire_store import open_fire_store
from framework.schedules.in_server import running_scheduler
from framework.schedules.runner import Runner
from framework.schedules.scheduler import LEASE_TICKS, Scheduler
from framework.serving.gateway import Gateway


def test_the_environment_sets_the_tick_and_a_bad_value_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STAFFROOM_SCHEDULER_TICK", raising=False)
    assert Settings.from_env(data_dir=tmp_path).scheduler_tick == 5.0
    monkeypatch.setenv("STAFFROOM_SCHEDULER_TICK", "0.5")
    assert Settings.from_env(data_dir=tmp_path).scheduler_tick == 0.5
    for bad in ("fast", "0", "-1", "nan", "7200"):
        monkeypatch.setenv("STAFFROOM_SCHEDULER_TICK", bad)
        with pytest.raises(InputError) as caught:
            Settings.from_env(data_dir=tmp_path)
        assert caught.value.field == "STAFFROOM_SCHEDULER_TICK" and caught.value.fix


async def test_a_scheduler_ticks_as_set_and_its_claims_last_twelve_ticks(
    settings: Settings,
) -> None:
    settings = settings.model_copy(update={"scheduler_tick": 0.5})
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, await staff.stores.database())
        try:
            scheduler = Scheduler(staff, store, Runner(staff))
            assert (scheduler.tick_seconds, scheduler.lease_seconds) == (0.5, 0.5 * LEASE_TICKS)
            scheduler.tick_seconds = 2.0  # `schedules run --tick 2`: the lease follows
            assert scheduler.lease_seconds == 2.0 * LEASE_TICKS
            fixed = Scheduler(staff, store, Runner(staff), tick_seconds=1.0, lease_seconds=30)
            assert (fixed.tick_seconds, fixed.lease_seconds) == (1.0, 30)
        finally:
            await store.close()


async def test_the_servers_scheduler_uses_the_setting(settings: Settings) -> None:
    settings = settings.model_copy(update={"scheduler_tick": 0.25})
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        try:
            async with running_scheduler(gateway) as running:
                assert running.scheduler.tick_seconds == 0.25
                assert running.scheduler.lease_seconds == 0.25 * LEASE_TICKS
        finally:
            await gateway.close()
