"""The room's queue in the ledger never holds a message no one will run: every later post of
the room would wait behind it. Each case here once did (on either backend)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from backend import stored_ledger
from rooms_at_rest import opened

from framework import Settings, Staffroom
from framework.errors import InputError
from framework.serving import Gateway
from framework.serving.room_queue import RoomQueue

WAIT = 20.0
"""Seconds a post may take here; a room held up by a stray row answers ``queued`` after it."""


async def test_a_reused_message_id_under_a_new_idempotency_key_leaves_no_row_behind(
    settings: Settings, desk: Callable[..., str]
) -> None:
    key = await opened(settings, "r1", desk())
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        first = await gateway.post(
            key, "@pm one", author="alice", message_id="x", idempotency_key="k1"
        )
        again = await gateway.post(
            key, "@pm one", author="alice", message_id="x", idempotency_key="k2"
        )
        with pytest.raises(InputError):  # bob names alice's message
            await gateway.post(key, "@pm mine", author="bob", message_id="x", idempotency_key="k3")
        later = await gateway.post(key, "@pm two", author="alice", message_id="y", timeout=WAIT)
        pending = await gateway.ledger.pending()
        await gateway.close()
    assert first.status == "done" and again.duplicate
    assert later.status == "done", "held up by a name left queued"
    assert pending == []


async def test_a_killed_processs_rows_run_by_each_messages_first_name(
    settings: Settings, desk: Callable[..., str]
) -> None:
    # x was accepted under two names with y's between them (two replicas admitting at once):
    # x's place is its first name's, so x runs, then y (not y waiting on x behind it).
    key = await opened(settings, "r2", desk())
    async with stored_ledger(settings) as killed:
        said = {"author": "alice", "text": "@pm x?"}
        await killed.admit(key, "idem:k", message_id="x", **said)
        await killed.admit(key, "msg:y", message_id="y", author="alice", text="@pm y?")
        await killed.admit(key, "msg:x", message_id="x", **said)
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)  # takes over what the killed process left
        y = await gateway.post(key, "@pm y?", author="alice", message_id="y", timeout=WAIT)
        history = (await gateway.session(key)).history()
        await gateway.close()
    assert y.status == "done" and y.duplicate
    asked = [e.meta["client_id"] for e in history if e.meta.get("human")]
    assert asked == ["x", "y"]


async def test_a_row_another_process_holds_running_does_not_stall_this_ones_posts(
    settings: Settings, desk: Callable[..., str]
) -> None:
    # On the file the other process's rows are its own queue; on a database, the rows of a
    # replica that is gone are taken over by the next sweep (1 s here) and run first.
    settings = settings.model_copy(update={"lease_seconds": 1})
    key = await opened(settings, "r3", desk())
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        async with stored_ledger(settings) as other:
            await other.admit(key, "msg:z", message_id="z", author="bob", text="@pm z?")
            await other.update(key, "z", state="running")  # ... and then it died
        y = await gateway.post(key, "@pm y?", author="alice", message_id="y", timeout=WAIT)
        await gateway.close()
    assert y.status == "done"


async def test_a_queued_opening_of_a_room_that_never_began_is_forgotten(
    settings: Settings, desk: Callable[..., str]
) -> None:
    desk()
    async with stored_ledger(settings) as killed:  # killed before the room's log was written
        await killed.admit(
            "room:ghost", "msg:o", message_id="o", author="alice", text="hi", opening=True
        )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        left = await gateway.ledger.get("room:ghost", "msg:o")
        await gateway.close()
    assert left is None, "a row no lane can run stays queued"


async def test_a_message_joined_to_another_is_never_run_on_its_own(
    settings: Settings, desk: Callable[..., str]
) -> None:
    # A sweep may read a message as queued just before it joins another one: when a lane
    # then tries to start it, the ledger says it is not that lane's to run.
    key = await opened(settings, "r4", desk("coalesce"))
    async with stored_ledger(settings) as ledger:
        await ledger.admit(key, "msg:t", message_id="t", author="alice", text="@pm first")
        await ledger.admit(key, "msg:m", message_id="m", author="alice", text="second")
        joined = await RoomQueue(ledger).coalesce(key, "m", "alice", "second", window=60)
        start = await RoomQueue(ledger).begin(key, "m")
    assert joined == "t"
    assert start.go == "answered" and start.merged_into == "t"
    result = start.answer(key, "m", "coalesce")
    assert result.status == "coalesced" and result.merged_into == "t"
    assert result.events == []  # nothing ran for it


async def test_a_waiting_message_the_ledger_forgot_runs_with_its_own_text(
    settings: Settings, desk: Callable[..., str]
) -> None:
    # Forgotten while it waited out the coalesce window (a failed run elsewhere forgets its
    # rows): it was accepted here, so it runs, with the text it was accepted with.
    key = await opened(settings, "r5", desk("coalesce", window=0.5))
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        queued = await gateway.post(key, "@pm hi", author="alice", message_id="m", wait=False)
        await gateway.ledger.forget(key, "m")
        await gateway.close()  # runs what its lanes hold
        history = (await gateway.session(key)).history()
    assert queued.status == "queued"
    asked = [e.content for e in history if e.meta.get("human")]
    assert asked == ["@pm hi"]
