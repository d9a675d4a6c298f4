"""The ingest ledger behaves the same on SQLite (one process) and PostgreSQL (every replica):
a redelivery finds the first delivery's entry, states and results stick, pending messages
come back oldest first, old finished ids are dropped as the ledger opens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from framework.database.pool import Database
from framework.serving.ledger import Ledger
from framework.serving.ledgers import open_ledger
from framework.serving.room_queue import RoomQueue

Opener = Callable[..., Awaitable[Ledger]]


@pytest.fixture(params=["sqlite", "postgres"])
async def open_one(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Opener]:
    """Opens the ledger of one backend (again and again: a restart); closes what it opened."""
    path = tmp_path / "ingest.sqlite"
    pools: list[Database] = []
    opened: list[Ledger] = []
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None

    async def opener(**kwargs: float) -> Ledger:
        db = None
        if url is not None:
            db = await Database.open(url, max_size=2)
            pools.append(db)
        ledger = await open_ledger(path, db, **kwargs)
        opened.append(ledger)
        return ledger

    yield opener
    for ledger in opened:
        await ledger.close()
    for db in pools:
        await db.close()


async def claim(ledger: Ledger, session: str, mid: str, text: str = "hello") -> object:
    return await ledger.claim(session, f"msg:{mid}", message_id=mid, author="alice", text=text)


async def test_a_redelivery_finds_the_first_entry_and_its_result(open_one: Opener) -> None:
    ledger = await open_one()
    assert await claim(ledger, "room:a", "m1", "hi 👋 ünïcode") is None, "a new id is claimed"
    again = await ledger.claim("room:a", "msg:m1", message_id="m1", author="bob", text="other")
    assert again is not None and again.text == "hi 👋 ünïcode" and again.author == "alice"
    assert again.state == "queued" and again.result is None
    assert await claim(ledger, "room:b", "m1") is None, "ids are per session"

    result = {"status": "done", "events": [{"id": "e1", "text": "答え"}], "n": 1.5}
    await ledger.update("room:a", "m1", state="done", result=result)
    await ledger.update("room:a", "m1", state="done")  # no result: the first one stays
    entry = await ledger.get("room:a", "msg:m1")
    assert entry is not None and entry.state == "done" and entry.result == result
    assert await ledger.get("room:a", "msg:nope") is None


async def test_a_message_and_its_idempotency_key_are_one_message(open_one: Opener) -> None:
    ledger = await open_one()
    for key in ("msg:m1", "idem:k1"):
        assert await ledger.claim("room:a", key, message_id="m1", author="a", text="t") is None
    assert {e.key for e in await ledger.by_message("room:a", "m1")} == {"msg:m1", "idem:k1"}
    await ledger.update("room:a", "m1", state="done", result={"ok": True})
    assert [e.result for e in await ledger.by_message("room:a", "m1")] == [{"ok": True}] * 2


async def test_pending_comes_back_oldest_first_across_sessions(open_one: Opener) -> None:
    ledger = await open_one()
    for session, mid in [("room:a", "1"), ("room:b", "2"), ("room:a", "3"), ("room:a", "4")]:
        await claim(ledger, session, mid)
    await ledger.update("room:a", "3", state="done", result={})
    await ledger.update("room:a", "4", state="running")
    pending = await ledger.pending()
    assert [(e.session, e.message_id) for e in pending] == [
        ("room:a", "1"),
        ("room:b", "2"),
        ("room:a", "4"),
    ]
    seqs = [e.seq for e in pending]
    assert seqs == sorted(seqs) and len(set(seqs)) == 3
    # What a gateway opening on this ledger runs: the same messages, in the same order.
    taken = await ledger.take_orphans()
    assert [(e.session, e.message_id, e.seq) for e in taken] == [
        (e.session, e.message_id, e.seq) for e in pending
    ]


async def test_coalesced_parts_join_their_target(open_one: Opener) -> None:
    ledger = await open_one()
    await claim(ledger, "room:a", "c0", "c0")
    for mid in ("c1", "c2"):  # each joins the waiting c0 as it arrives (the room's queue)
        await claim(ledger, "room:a", mid, mid)
        assert await RoomQueue(ledger).coalesce("room:a", mid, "alice", mid, 60) == "c0"
    assert [e.message_id for e in await ledger.merged_into("room:a", "c0")] == ["c1", "c2"]
    target = await ledger.get("room:a", "msg:c0")
    assert target is not None and target.text == "c0\nc1\nc2"


async def test_a_forgotten_message_runs_again_on_retry(open_one: Opener) -> None:
    ledger = await open_one()
    await claim(ledger, "room:a", "m1")
    await ledger.forget("room:a", "m1")
    assert await ledger.get("room:a", "msg:m1") is None
    assert await claim(ledger, "room:a", "m1") is None, "the retry is a new message"


async def test_sent_messages_map_to_their_events(open_one: Opener) -> None:
    ledger = await open_one()
    assert await ledger.sent_event("room:a", "om_1") is None
    await ledger.record_sent("room:a", "om_1", "e1")
    await ledger.record_sent("room:a", "om_1", "e2")  # the platform reused its id: latest wins
    assert await ledger.sent_event("room:a", "om_1") == "e2"
    assert await ledger.sent_event("room:b", "om_1") is None


async def test_reopening_keeps_state_and_drops_old_finished_ids(open_one: Opener) -> None:
    first = await open_one()
    await claim(first, "room:a", "done")
    await claim(first, "room:a", "waiting")
    await first.update("room:a", "done", state="done", result={})
    await first.record_sent("room:a", "om_1", "e1")
    second = await open_one()  # a restart that keeps a week: nothing goes
    assert await second.get("room:a", "msg:done") is not None
    third = await open_one(retention=0.0)  # everything is old: finished ids go, pending stay
    assert await third.get("room:a", "msg:done") is None
    assert [e.message_id for e in await third.pending()] == ["waiting"]
    assert await third.sent_event("room:a", "om_1") is None
