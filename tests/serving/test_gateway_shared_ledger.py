"""The gateway on the shared ledger: a redelivery to another replica (another gateway on the
same database) returns the first delivery's result and runs nothing again."""

from __future__ import annotations

from collections.abc import Callable

from framework import Settings, Staffroom
from framework.database.pool import Database
from framework.serving import Gateway
from framework.serving.ledgers import open_ledger
from framework.sessions.events import EventKind


async def test_a_redelivery_to_another_replica_returns_the_first_result(
    settings: Settings, desk: Callable[..., str], pg_url: str
) -> None:
    scenario = desk()
    results = []
    for _replica in range(2):
        db = await Database.open(pg_url, max_size=2)
        try:
            async with await Staffroom.open(settings=settings) as staff:
                gateway = Gateway(staff, await open_ledger(settings.data_dir / "x", db))
                room = await gateway.open_room("r1", scenario)
                results.append(
                    await gateway.post(room.key, "@pm hello", author="alice", message_id="om_1")
                )
                history = room.history()
                await gateway.close()
        finally:
            await db.close()
    first, again = results
    assert first.status == "done" and not first.duplicate and first.events
    assert again.duplicate and [e.id for e in again.events] == [e.id for e in first.events]
    people = [e for e in history if e.kind == EventKind.MESSAGE and e.meta.get("human")]
    assert [e.meta["client_id"] for e in people] == ["om_1"], "the message ran once"
    assert not (settings.data_dir / "x").exists(), "no SQLite ledger beside the database"
