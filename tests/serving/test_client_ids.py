"""A client's message id lives in its own namespace: no id anyone sends can name one of the
room's own events, so no post changes what is stored for anyone else (issue 20, item 4)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from backend import stored_ledger
from rooms_at_rest import reopened

from framework import Settings, Staffroom
from framework.errors import InputError
from framework.serving import Gateway
from framework.sessions.events import Event, EventKind, client_event_id


def humans(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == EventKind.MESSAGE and e.meta.get("human")]


def replies(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human")]


def entry_of(events: list[Event]) -> Event:
    return next(e for e in events if e.meta.get("entry"))


async def test_a_post_with_the_entrys_id_is_stored_and_answered(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway, room = await reopened(staff, "e1", scenario)  # the entry is written
        entry = entry_of(room.history())
        result = await gateway.post(room.key, "@pm hello", author="alice", message_id=entry.id)
        await gateway.close()
        history = room.history()
    assert result.status == "done" and not result.duplicate
    (message,) = humans(history)
    assert message.content == "@pm hello" and message.meta["client_id"] == entry.id
    assert message.id == client_event_id(entry.id) != entry.id
    assert [e.author for e in replies(history)] == ["pm"]
    assert entry_of(history) == entry, "the entry is as it was"


async def test_a_post_with_a_later_replys_id_does_not_suppress_that_reply(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway, room = await reopened(staff, "e2", scenario)
        epoch = entry_of(room.history()).meta["epoch"]
        await gateway.post(room.key, "@pm first", author="alice")
        # The id the next employee reply gets: bob sends it as his own message's id.
        next_reply = f"{epoch}-t{(await room.status()).turns:04d}-msg"
        bobs = await gateway.post(room.key, "@engineer hi", author="bob", message_id=next_reply)
        alices = await gateway.post(room.key, "@designer and you?", author="alice")
        await gateway.close()
        history = room.history()
    assert [e.author for e in replies(history)] == ["pm", "engineer", "designer"]
    assert next_reply in {e.id for e in replies(history)}, "the reply took its own id"
    assert [e.author for e in replies(bobs.events)] == ["engineer"]
    assert [e.author for e in replies(alices.events)] == ["designer"]
    said = ["@pm first", "@engineer hi", "@designer and you?"]
    assert [e.content for e in humans(history)] == said


async def test_ids_the_gateway_makes_are_the_events_own(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("e5", scenario)
        plain = await gateway.post(room.key, "@pm one", author="alice")
        keyed = await gateway.post(room.key, "@pm two", author="alice", idempotency_key="k-1")
        sent = await gateway.post(room.key, "@pm three", author="alice", message_id="om_3")
        await gateway.close()
    assert plain.events[0].id == plain.message_id and "client_id" not in plain.events[0].meta
    assert keyed.events[0].id == keyed.message_id
    assert sent.events[0].id == client_event_id("om_3") and sent.message_id == "om_3"


async def test_a_redelivery_of_a_message_stored_before_namespaced_ids_is_not_stored_twice(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("e3", staff.catalog.scenario_by_id(scenario))
        async for _ in room.start():
            pass
        # What the gateway stored before: the platform's id as the event's own id.
        async for _ in room.post("@pm hello", author="alice", message_id="om_old"):
            pass
        before = room.history()
    assert [e.id for e in humans(before)] == ["om_old"] and replies(before)
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)  # a ledger that never saw om_old (lost, expired)
        again = await gateway.post("room:e3", "@pm hello", author="alice", message_id="om_old")
        await gateway.close()
        after = (await gateway.session("room:e3")).history()
    assert again.status == "done" and [e.id for e in again.events[:1]] == ["om_old"]
    assert again.events == before[-len(again.events) :], "the first delivery's message and reply"
    assert after == before, "nothing stored or answered again"


async def test_a_queued_message_found_stored_under_its_own_id_is_not_stored_twice(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("e6", scenario)
        done = await gateway.post(room.key, "@pm hello", author="alice")  # an id it made
        await gateway.close()
        before = room.history()
    # A kill after the run but before the ledger noted it: the message is queued again.
    async with stored_ledger(settings) as ledger:
        await ledger.update("room:e6", done.message_id, state="queued")
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)  # runs what the ledger holds queued
        await gateway.close()
        after = (await gateway.session("room:e6")).history()
    assert after == before


async def test_an_old_raw_id_of_another_persons_message_is_not_theirs_to_redeliver(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("e4", staff.catalog.scenario_by_id(scenario))
        async for _ in room.post("@pm hello", author="alice", message_id="om_old"):
            pass  # stored before namespaced ids
        # Only alice's own redelivery is that message; bob sending the id he read off the
        # history posts a message of his own.
        said = [e async for e in room.post("@pm me too", author="bob", client_id="om_old")]
        history = room.history()
    assert [e.content for e in humans(history)] == ["@pm hello", "@pm me too"]
    assert said[0].id == client_event_id("om_old") and replies(said)


async def test_a_client_id_is_stored_once_across_restarts_without_the_ledger(
    settings: Settings,
) -> None:
    for _ in range(2):  # a second process: the log alone knows the message
        async with await Staffroom.open(settings=settings) as staff:
            dm = await staff.dm("pm", "alice")
            async for _ in dm.post("hello", client_id="slack-C123-1700000000.0001"):
                pass
            history = dm.history()
    (message,) = humans(history)
    assert message.meta["client_id"] == "slack-C123-1700000000.0001"
    assert message.id == client_event_id("slack-C123-1700000000.0001")
    assert len(replies(history)) == 1


async def test_an_own_message_id_that_names_another_event_is_refused(staff: Staffroom) -> None:
    dm = await staff.dm("pm", "alice")
    said = [e async for e in dm.post("hello")]
    reply = replies(said)[0]
    with pytest.raises(InputError, match="id of another event"):
        async for _ in dm.post("quiet, you", message_id=reply.id):
            pass
    assert [e.content for e in humans(dm.history())] == ["hello"]


async def test_another_persons_message_id_gets_no_replay_of_their_answer(
    settings: Settings, desk: Callable[..., str]
) -> None:
    """A redelivery answers with the first result; for another author that would be reading
    someone else's message and its replies through a post."""
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("e9", scenario)
        first = await gateway.post(room.key, "@pm private", author="alice", message_id="m-1")
        with pytest.raises(InputError) as refused:
            await gateway.post(room.key, "anything", author="bob", message_id="m-1")
        again = await gateway.post(room.key, "@pm private", author="alice", message_id="m-1")
        await gateway.close()
    assert refused.value.field == "message_id" and "another person" in refused.value.message
    assert again.duplicate and again.events == first.events
