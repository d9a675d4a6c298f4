"""The fire ledger behaves the same on ``schedules.sqlite`` and on the database: a fire is
claimed once, a dead owner's claim is taken over and its late outcome refused, missed fires
are recorded once, cursors never move back, pauses and heartbeats stick across a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from framework.data_folder import DataFolder
from framework.database.pool import Database
from framework.schedules.fire_store import FireStore, open_fire_store

Opener = Callable[[], Awaitable[FireStore]]

T0 = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
LEASE = 60.0


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture(params=["sqlite", "postgres"])
async def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens the ledger of one backend on one data folder (again: a restart, or another
    process); closes what it opened."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    pools: list[Database] = []
    opened: list[FireStore] = []

    async def opener() -> FireStore:
        db = None
        if url is not None:
            db = await Database.open(url, max_size=2)
            pools.append(db)
        store = await open_fire_store(tmp_path / "data", db)
        opened.append(store)
        return store

    yield opener
    for store in opened:
        await store.close()
    for db in pools:
        await db.close()


async def test_a_fire_is_claimed_once_and_recorded_by_its_owner(open_store: Opener) -> None:
    store = await open_store()
    fire = await store.claim("standup@1", "standup", T0, "due", "a", now=at(2), lease_s=LEASE)
    assert fire is not None
    assert (fire.fire_id, fire.schedule, fire.due, fire.kind) == ("standup@1", "standup", T0, "due")
    assert (fire.state, fire.owner, fire.attempts) == ("running", "a", 1)
    assert fire.started == at(2) and fire.claimed_until == at(2 + LEASE)
    assert fire.finished is None and fire.detail == "" and fire.session is None

    for owner in ("b", "a"):  # a live claim is nobody else's, nor its owner's a second time
        again = await store.claim("standup@1", "standup", T0, "due", owner, now=at(3), lease_s=9)
        assert again is None
    assert await store.running("standup") == [fire]
    assert await store.running("other") == []

    assert await store.set_session("standup@1", "a", "room:standup-2026-03-02")
    assert not await store.set_session("standup@1", "b", "room:elsewhere")
    assert await store.record("standup@1", "a", "done", now=at(40), detail="posted")
    done = await store.get("standup@1")
    assert done is not None and done.state == "done" and done.detail == "posted"
    assert done.finished == at(40) and done.claimed_until is None and done.owner == "a"
    assert done.session == "room:standup-2026-03-02", "the session noted while running stays"
    assert await store.running("standup") == []

    # Finished is final: no second outcome, no claim even long after the lease.
    assert not await store.record("standup@1", "a", "failed", now=at(41), detail="again")
    late = await store.claim("standup@1", "standup", T0, "due", "b", now=at(9999), lease_s=9)
    assert late is None
    assert (await store.get("standup@1")) == done
    assert await store.get("standup@2") is None


async def test_a_dead_owners_claim_is_taken_over_and_its_late_outcome_refused(
    open_store: Opener,
) -> None:
    store = await open_store()
    await store.claim("s@1", "s", T0, "catchup", "a", now=at(0), lease_s=LEASE)
    assert await store.claim("s@1", "s", T0, "due", "b", now=at(LEASE), lease_s=LEASE) is None, (
        "a claim is taken over only once it has run out, not at its last instant"
    )
    taken = await store.claim("s@1", "s", at(5), "due", "b", now=at(LEASE + 1), lease_s=30)
    assert taken is not None
    assert (taken.owner, taken.attempts, taken.state) == ("b", 2, "running")
    assert taken.kind == "catchup" and taken.due == T0, "the row's schedule and due time stay"
    assert taken.started == at(LEASE + 1) and taken.claimed_until == at(LEASE + 31)

    assert not await store.record("s@1", "a", "done", now=at(70), detail="late"), (
        "the owner that lost its claim cannot overwrite the outcome"
    )
    assert not await store.set_session("s@1", "a", "room:x")
    assert await store.renew(["s@1"], "a", now=at(70), lease_s=LEASE) == []
    assert await store.record("s@1", "b", "failed", now=at(80), detail="boom", session="dm:x@pm")
    final = await store.get("s@1")
    assert final is not None and (final.state, final.owner, final.detail) == ("failed", "b", "boom")
    assert final.session == "dm:x@pm" and final.attempts == 2


async def test_renewing_keeps_a_claim_and_only_its_owner_can(open_store: Opener) -> None:
    store = await open_store()
    for fid in ("s@1", "s@2"):
        await store.claim(fid, "s", T0, "due", "a", now=at(0), lease_s=LEASE)
    await store.claim("s@3", "s", T0, "due", "b", now=at(0), lease_s=LEASE)
    await store.record("s@2", "a", "quiet", now=at(1))
    renewed = await store.renew(["s@1", "s@2", "s@3", "s@9"], "a", now=at(50), lease_s=LEASE)
    assert renewed == ["s@1"], "only running fires a holds"
    assert await store.renew([], "a", now=at(50), lease_s=LEASE) == []
    assert await store.claim("s@1", "s", T0, "due", "c", now=at(100), lease_s=LEASE) is None
    assert await store.claim("s@3", "s", T0, "due", "c", now=at(100), lease_s=LEASE) is not None
    held = await store.get("s@1")
    assert held is not None and held.claimed_until == at(50 + LEASE) and held.owner == "a"


async def test_missed_and_skipped_fires_are_recorded_once(open_store: Opener) -> None:
    store = await open_store()
    assert await store.record_missed("s@1", "s", T0, "missed", now=at(900), detail="down 15m")
    assert not await store.record_missed("s@1", "s", T0, "skipped", now=at(901), detail="again")
    missed = await store.get("s@1")
    assert missed is not None
    assert (missed.state, missed.detail, missed.owner, missed.attempts) == (
        "missed",
        "down 15m",
        None,
        0,
    )
    assert missed.finished == at(900) and missed.started is None and missed.kind == "due"
    assert await store.claim("s@1", "s", T0, "due", "a", now=at(901), lease_s=LEASE) is None

    await store.claim("s@2", "s", at(60), "due", "a", now=at(60), lease_s=LEASE)
    assert not await store.record_missed("s@2", "s", at(60), "skipped", now=at(61), detail="x")
    assert await store.record_missed(
        "s@3", "s", at(120), "skipped", now=at(120), detail="paused", kind="builtin"
    )
    skipped = await store.get("s@3")
    assert skipped is not None and (skipped.state, skipped.kind) == ("skipped", "builtin")


async def test_history_is_newest_due_first_per_schedule_with_a_limit(open_store: Opener) -> None:
    store = await open_store()
    for minute in (0, 2, 1):
        due = at(60 * minute)
        await store.record_missed(f"a@{minute}", "a", due, "missed", now=at(999), detail="")
    await store.claim("b@0", "b", at(90), "due", "x", now=at(90), lease_s=LEASE)
    assert [f.fire_id for f in await store.history()] == ["a@2", "b@0", "a@1", "a@0"]
    assert [f.fire_id for f in await store.history("a")] == ["a@2", "a@1", "a@0"]
    assert [f.fire_id for f in await store.history("a", limit=2)] == ["a@2", "a@1"]
    assert [f.fire_id for f in await store.history(limit=1)] == ["a@2"]
    assert await store.history("gone") == []


async def test_the_cursor_never_moves_back(open_store: Opener) -> None:
    store = await open_store()
    assert await store.cursor("s") is None
    await store.advance("s", at(600))
    await store.advance("s", at(300))  # a scheduler with an older view
    assert await store.cursor("s") == at(600)
    await store.advance("s", at(600.5))
    assert await store.cursor("s") == at(600.5), "sub-second times keep their order"
    await store.advance("t", at(5))
    assert await store.cursor("s") == at(600.5) and await store.cursor("t") == at(5)


async def test_pauses_keep_their_first_time_and_resume(open_store: Opener) -> None:
    store = await open_store()
    assert await store.paused() == {}
    await store.set_paused("b", True, by="alice", now=at(10))
    await store.set_paused("a", True, by="bob", now=at(20))
    await store.set_paused("b", True, by="carol", now=at(30))
    assert await store.paused() == {"a": at(20), "b": at(10)}
    await store.set_paused("b", False, by="alice", now=at(40))
    await store.set_paused("never", False, by="alice", now=at(40))
    assert await store.paused() == {"a": at(20)}


async def test_heartbeats_show_each_scheduler_and_forget_long_gone_ones(
    open_store: Opener,
) -> None:
    store = await open_store()
    await store.beat("old", now=at(0), host="h1", pid=11)
    await store.beat("s1", now=at(100), host="h1", pid=12)
    await store.beat("s1", now=at(160), host="h1", pid=12)
    await store.beat("s2", now=at(130), host="h2", pid=7)
    beats = await store.heartbeats()
    assert [(b.owner, b.host, b.pid) for b in beats] == [
        ("s1", "h1", 12),
        ("s2", "h2", 7),
        ("old", "h1", 11),
    ]
    assert beats[0].since == at(100) and beats[0].last == at(160)

    week = 7 * 24 * 3600
    await store.beat("s2", now=at(week + 10), host="h2", pid=7)
    assert [b.owner for b in await store.heartbeats()] == ["s2", "s1"], "old stopped a week ago"


async def test_everything_is_still_there_after_a_restart(open_store: Opener) -> None:
    first = await open_store()
    await first.claim("s@1", "s", T0, "run_now", "a", now=at(0), lease_s=LEASE)
    await first.advance("s", T0)
    await first.set_paused("s", True, by="alice", now=at(1))
    await first.beat("a", now=at(2), host="h", pid=1)
    await first.close()
    again = await open_store()
    fire = await again.get("s@1")
    assert fire is not None and fire.state == "running" and fire.kind == "run_now"
    assert await again.cursor("s") == T0 and "s" in await again.paused()
    assert [b.owner for b in await again.heartbeats()] == ["a"]


async def test_times_are_utc_whatever_zone_they_came_in(open_store: Opener) -> None:
    store = await open_store()
    berlin = timezone(timedelta(hours=1))
    due = datetime(2026, 3, 2, 9, 30, 0, 123456, tzinfo=berlin)
    fire = await store.claim("s@1", "s", due, "due", "a", now=due, lease_s=0.5)
    assert fire is not None and fire.due == due and fire.due.utcoffset() == timedelta(0)
    assert fire.due.hour == 8 and fire.due.microsecond == 123456
    with pytest.raises(ValueError, match="timezone-aware"):
        await store.claim("s@2", "s", datetime(2026, 3, 2, 9, 30), "due", "a", now=T0, lease_s=1)
    with pytest.raises(ValueError, match="not 'running'"):
        await store.record("s@1", "a", "running", now=T0)  # type: ignore[arg-type]


@pytest.mark.sqlite_only
async def test_without_a_database_the_ledger_is_schedules_sqlite(tmp_path: Path) -> None:
    store = await open_fire_store(tmp_path / "data", None)
    await store.close()
    assert DataFolder(tmp_path / "data").schedules == tmp_path / "data" / "schedules.sqlite"
    assert store.where == str(tmp_path / "data" / "schedules.sqlite")
    assert (tmp_path / "data" / "schedules.sqlite").is_file()
