"""Room leases: one replica runs a room at a time; a takeover bumps the epoch; a held lease
notices when it is lost (taken over, or the database out of reach past the lease)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from framework.database.leases import LEASE_MIGRATIONS, Lease, Leases
from framework.database.migrations import apply_migrations
from framework.database.pool import Database
from framework.errors import RoomBusyError

ROOM = "tech-article:2026-12-04"


@pytest.fixture
async def replicas(pg_url: str) -> AsyncIterator[list[Database]]:
    """Two replicas (each its own pool and owner id) on one database with the lease table."""
    dbs = [await Database.open(pg_url, max_size=2) for _ in range(2)]
    await apply_migrations(dbs[0], LEASE_MIGRATIONS)
    try:
        yield dbs
    finally:
        for db in dbs:
            await db.close()


async def until_expired(leases: Leases, session: str) -> None:
    deadline = time.monotonic() + 5
    while await leases.holder(session) is not None:
        assert time.monotonic() < deadline, "the lease never expired"
        await asyncio.sleep(0.05)


async def expire_now(db: Database, session: str) -> None:
    """What a long pause past the lease does to it, without waiting it out."""
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE staffroom_leases SET expires_at = now() WHERE session = %s", (session,)
        )


class RecordingFence:
    """The fence side of a held lease, as the fenced checkpointer sees it."""

    def __init__(self) -> None:
        self.fences: dict[str, Lease] = {}

    def fence(self, thread_id: str, lease: Lease) -> None:
        self.fences[thread_id] = lease

    def unfence(self, thread_id: str) -> None:
        self.fences.pop(thread_id, None)


async def test_acquire_renew_release_keep_the_epoch_until_someone_takes_over(
    replicas: list[Database],
) -> None:
    leases = Leases(replicas[0], seconds=30)
    first = await leases.acquire(ROOM)
    assert first is not None and first.epoch == 1 and first.owner == replicas[0].owner
    again = await leases.acquire(ROOM)
    assert again is not None and again.epoch == 1, "re-acquiring a live lease renews it"
    renewed = await leases.renew(first)
    assert renewed is not None and renewed.epoch == 1
    assert renewed.expires_at >= first.expires_at
    assert await leases.holder(ROOM) == renewed
    assert await leases.holders() == [renewed]

    await leases.release(renewed)
    assert await leases.holder(ROOM) is None and await leases.holders() == []
    assert await leases.renew(renewed) is None, "a released lease cannot be renewed"
    again = await leases.acquire(ROOM)
    assert again is not None and again.epoch == 1, "taken again by its last owner: same epoch"
    await leases.release(again)
    taken = await Leases(replicas[1], seconds=30).acquire(ROOM)
    assert taken is not None and taken.epoch == 2, "another taker bumps the epoch"


async def test_another_replica_is_refused_while_live_and_takes_over_after_expiry(
    replicas: list[Database],
) -> None:
    a, b = Leases(replicas[0], seconds=0.5), Leases(replicas[1], seconds=0.5)
    held = await a.acquire(ROOM)
    assert held is not None
    assert await b.acquire(ROOM) is None, "refused while A's lease is live"
    await until_expired(b, ROOM)
    taken = await b.acquire(ROOM)
    assert taken is not None and taken.owner == replicas[1].owner and taken.epoch == 2
    assert await a.renew(held) is None, "A learns it lost the room"
    assert await a.acquire(ROOM) is None, "and cannot take it back while B's is live"


async def test_many_replicas_racing_for_one_room_yield_one_owner(pg_url: str) -> None:
    dbs = [await Database.open(pg_url, max_size=4) for _ in range(5)]
    try:
        await apply_migrations(dbs[0], LEASE_MIGRATIONS)
        racers = [Leases(db, seconds=30) for db in dbs]
        got = await asyncio.gather(*(racers[i % 5].acquire(ROOM) for i in range(20)))
        won = [lease for lease in got if lease is not None]
        assert len({lease.owner for lease in won}) == 1, "exactly one replica won the room"
        assert {lease.epoch for lease in won} == {1}
        assert len(won) == 4, "the winner's own four calls all hold it; the others none"
    finally:
        for db in dbs:
            await db.close()


async def test_a_held_lease_is_renewed_kept_fenced_and_released(
    replicas: list[Database],
) -> None:
    a = Leases(replicas[0], seconds=0.6)
    fence = RecordingFence()
    async with a.hold(ROOM, wait=0, fence=fence) as held:
        assert fence.fences[ROOM] == held.lease
        first_expiry = held.lease.expires_at
        await asyncio.sleep(0.7)  # past the lease: only the renewals keep it
        assert not held.lost.is_set()
        assert held.lease.expires_at > first_expiry and held.lease.epoch == 1
        assert fence.fences[ROOM] == held.lease, "the fence follows the renewals"
        assert await a.holder(ROOM) == held.lease
    assert fence.fences == {}, "unfenced on exit"
    assert await a.holder(ROOM) is None, "released on exit: the room is free at once"


async def test_a_held_lease_is_lost_when_another_replica_took_the_room(
    replicas: list[Database],
) -> None:
    a, b = Leases(replicas[0], seconds=0.6), Leases(replicas[1], seconds=30)
    fence = RecordingFence()
    async with a.hold(ROOM, wait=0, fence=fence) as held:
        await expire_now(replicas[1], ROOM)  # A was paused past its lease
        taken = await b.acquire(ROOM)
        assert taken is not None and taken.epoch == 2
        await asyncio.wait_for(held.lost.wait(), timeout=2)
        assert ROOM not in fence.fences, "writes are refused from the moment it is lost"
    assert await b.holder(ROOM) == taken, "A's exit did not release B's lease"


async def test_a_replica_that_cannot_reach_the_database_gives_the_room_up(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    db = await Database.open(pg_url, max_size=2)
    await apply_migrations(db, LEASE_MIGRATIONS)
    a = Leases(db, seconds=0.4)
    start = time.monotonic()
    async with a.hold(ROOM, wait=0) as held:
        await db.close()  # every renewal fails from now on
        await asyncio.wait_for(held.lost.wait(), timeout=2)
        assert time.monotonic() - start < 0.4 + 0.5, "given up by the end of the lease"
    assert "could not release" in caplog.text, "the failed release is logged, not raised"


async def test_holding_a_room_another_replica_runs_is_refused_naming_it(
    replicas: list[Database],
) -> None:
    a, b = Leases(replicas[0], seconds=30), Leases(replicas[1], seconds=30)
    assert await b.acquire(ROOM) is not None
    start = time.monotonic()
    with pytest.raises(RoomBusyError, match=f"being run by replica {replicas[1].owner}"):
        async with a.hold(ROOM, wait=0.3):
            pass
    assert time.monotonic() - start >= 0.3, "it kept trying for `wait` seconds"


async def test_holding_waits_for_a_room_that_frees_up(replicas: list[Database]) -> None:
    a, b = Leases(replicas[0], seconds=30), Leases(replicas[1], seconds=30)
    other = await b.acquire(ROOM)
    assert other is not None

    async def close_it_soon() -> None:
        await asyncio.sleep(0.2)  # B finishes its turn meanwhile
        await b.release(other)

    closing = asyncio.create_task(close_it_soon())
    async with a.hold(ROOM, wait=2) as held:
        assert held.lease.owner == replicas[0].owner and held.lease.epoch == 2
    await closing


class AnswerSignallingLeases(Leases):
    """Real leases that also say the moment a renewal's answer is back from the database."""

    answered: asyncio.Future[None] | None = None

    async def renew(self, lease: Lease) -> Lease | None:
        renewed = await super().renew(lease)
        if self.answered is not None and not self.answered.done():
            self.answered.set_result(None)
        return renewed


async def test_a_run_ending_just_as_a_renewal_is_answered_gives_the_room_back(
    replicas: list[Database],
) -> None:
    # The replicas benchmark caught a live replica holding a room for minutes after its run
    # had ended: the run ended in the instant between a renewal's answer and the renewing
    # task's wake-up, the stop was swallowed (asyncio.wait_for on Python 3.11 returns the
    # answer instead of raising CancelledError, cpython #86296), the renewals went on for
    # ever and the release waited for them. Here the run ends in exactly that instant.
    a = AnswerSignallingLeases(replicas[0], seconds=0.6)  # renewed every 0.2 s
    b = Leases(replicas[1], seconds=30)

    async def run() -> None:
        a.answered = asyncio.get_running_loop().create_future()
        async with a.hold(ROOM, wait=0):
            await a.answered  # the run ends the moment a renewal's answer is in

    running = asyncio.create_task(run())
    done, _ = await asyncio.wait({running}, timeout=5)
    if not done:  # the bug: the block's exit waits for renewals that never stop
        running.cancel()
        await asyncio.wait({running})
    assert done, "the run's end waited for the lease's renewals, which went on for ever"
    await running
    assert await a.holder(ROOM) is None, "the room was released at the end of the run"
    await asyncio.sleep(0.5)  # more than two renewal periods: a renewal left running shows
    taken = await b.acquire(ROOM)
    assert taken is not None and taken.epoch == 2, "another replica takes the room at once"
