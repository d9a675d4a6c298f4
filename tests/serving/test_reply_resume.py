"""A reply accepted before a crash is still a reply when it runs: the ingest ledger keeps its
``reply_to`` with its text, and a ledger written before replies were kept is read (and
upgraded) as it is."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import pytest
from backend import stored_ledger
from rooms_at_rest import opened

from framework import Settings, Staffroom
from framework.data_folder import DataFolder
from framework.serving import Gateway
from framework.sessions.events import EventKind

OLD_SCHEMA = """
CREATE TABLE ingest (
    session TEXT NOT NULL, key TEXT NOT NULL, message_id TEXT NOT NULL, author TEXT NOT NULL,
    text TEXT NOT NULL, state TEXT NOT NULL, merged_into TEXT, result TEXT,
    seq INTEGER NOT NULL, created REAL NOT NULL, PRIMARY KEY (session, key)
);
"""


async def test_a_reply_cut_off_by_a_crash_runs_as_a_reply(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        first = await gateway.post(
            (await gateway.open_room("q1", scenario)).key, "@pm hello", author="bob"
        )
        await gateway.close()
    answer = next(e for e in first.events if e.kind == EventKind.MESSAGE and e.author == "pm")
    # What a killed process leaves: the reply in the ledger, queued, never run.
    async with stored_ledger(settings) as ledger:
        await ledger.claim(
            "room:q1", "msg:r-1", message_id="r-1", author="bob", text="@pm ok", reply_to=answer.id
        )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        replay = await gateway.post("room:q1", "@pm ok", author="bob", message_id="r-1")
        await gateway.close()
    assert replay.duplicate and replay.status == "done"
    assert replay.events[0].meta["reply_to"] == answer.id


@pytest.mark.sqlite_only  # an ingest.sqlite file of an older layout
async def test_a_ledger_from_before_replies_were_kept_still_runs_its_queue(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    await opened(settings, "q2", scenario)
    path = DataFolder(settings.data_dir).ingest
    path.unlink()
    with sqlite3.connect(path) as old:
        old.executescript(OLD_SCHEMA)
        old.execute(
            "INSERT INTO ingest VALUES ('room:q2', 'msg:o-1', 'o-1', 'bob', '@pm ping', 'queued',"
            " NULL, NULL, 1, strftime('%s', 'now'))"
        )
    old.close()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        replay = await gateway.post("room:q2", "@pm ping", author="bob", message_id="o-1")
        await gateway.close()
    assert replay.duplicate and replay.status == "done"
    assert "reply_to" not in replay.events[0].meta
