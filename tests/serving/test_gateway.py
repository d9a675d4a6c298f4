"""The gateway: exactly-once ingestion, double-texting policies, the durable queue."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from backend import stored_ledger
from rooms_at_rest import opened, reopened

from framework import Settings, Staffroom
from framework.errors import InputError
from framework.serving import Gateway
from framework.sessions.events import Event, EventKind


def humans(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == EventKind.MESSAGE and e.meta.get("human")]


def employees_said(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human")]


async def test_a_redelivery_returns_the_first_result_even_after_a_restart(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r1", scenario)
        first = await gateway.post(room.key, "@pm hello", author="alice", message_id="om_1")
        again = await gateway.post(room.key, "@pm hello", author="alice", message_id="om_1")
        await gateway.close()
    assert first.status == "done" and not first.duplicate
    assert employees_said(first.events), "pm answered"
    assert again.duplicate and again.events == first.events
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        later = await gateway.post("room:r1", "@pm hello", author="alice", message_id="om_1")
        history = (await gateway.session("room:r1")).history()
        await gateway.close()
    assert later.duplicate and [e.id for e in later.events] == [e.id for e in first.events]
    assert [e.meta["client_id"] for e in humans(history)] == ["om_1"]
    assert len(employees_said(history)) == len(employees_said(first.events))


async def test_an_idempotency_key_works_like_a_platform_id(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r2", scenario)
        one = await gateway.post(room.key, "hi", author="bob", idempotency_key="k-1")
        two = await gateway.post(room.key, "hi", author="bob", idempotency_key="k-1")
        other = await gateway.post(room.key, "hi", author="bob", idempotency_key="k-2")
        await gateway.close()
        history = room.history()
    assert two.duplicate and two.message_id == one.message_id
    assert not other.duplicate and other.message_id != one.message_id
    assert len(humans(history)) == 2


async def test_an_old_message_redelivered_to_a_room_is_not_answered_again(staff: Staffroom) -> None:
    # The checkpoint remembers the last 50 routed ids; the log decides past that.
    dm = await staff.dm("pm", "alice")
    async for _ in dm.post("first", message_id="old-1"):
        pass
    for n in range(55):
        async for _ in dm.post(f"message {n}"):
            pass
    await dm.drain()  # background consolidation appends its own events
    before = len(dm.history())
    replayed = [e async for e in dm.post("first", message_id="old-1")]
    await dm.drain()
    assert replayed == [] and len(dm.history()) == before


async def test_enqueue_runs_concurrent_posts_one_after_another(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk(delay=0.05)
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r3", scenario)
        texts = [f"@engineer question {n}" for n in range(6)]
        results = await asyncio.gather(
            *(
                gateway.post(room.key, t, author="alice", message_id=f"q{n}")
                for n, t in enumerate(texts)
            )
        )
        await gateway.close()
        history = room.history()
    assert [r.status for r in results] == ["done"] * 6
    # Each question is stored, then answered, before the next one is stored: no interleaving.
    said = [e for e in history if e.kind == EventKind.MESSAGE]
    order = [("human" if e.meta.get("human") else "employee") for e in said]
    assert order == ["human", "employee"] * 6
    assert sorted(e.meta["client_id"] for e in humans(history)) == [f"q{n}" for n in range(6)]


async def test_reject_refuses_a_message_while_the_room_answers(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk("reject", delay=0.3)
    async with await Staffroom.open(settings=settings) as staff:
        gateway, room = await reopened(staff, "r4", scenario)  # let the entry finish
        await gateway.session(room.key)
        busy = asyncio.create_task(gateway.post(room.key, "@pm one", author="alice"))
        await asyncio.sleep(0.1)
        refused = await gateway.post(room.key, "@pm two", author="bob", message_id="m2")
        history = room.history()
        answered = await busy
        # Not accepted, so not remembered: the platform's retry once the room is idle posts it.
        retried = await gateway.post(room.key, "@pm two", author="bob", message_id="m2")
        await gateway.close()
    assert refused.status == "rejected" and refused.room is not None
    assert "m2" not in {e.meta.get("client_id") for e in history}
    assert answered.status == "done"
    assert retried.status == "done" and not retried.duplicate
    assert employees_said(retried.events)


async def test_interrupt_stops_the_run_between_turns_and_takes_the_new_message(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk("interrupt", delay=0.4)
    async with await Staffroom.open(settings=settings) as staff:
        gateway, room = await reopened(staff, "r5", scenario)
        await gateway.session(room.key)
        long = asyncio.create_task(
            gateway.post(room.key, "@pm @engineer @designer all of you", author="alice")
        )
        await asyncio.sleep(0.2)  # pm's turn is under way
        newer = await gateway.post(room.key, "@designer only you", author="alice")
        first = await long
        await gateway.close()
        status = await room.status()
    assert first.status == "interrupted"
    wait = first.events[-1]
    assert wait.kind == EventKind.WAIT and wait.content["reason"] == "interrupted"
    assert wait.content["dropped"] == ["engineer", "designer"]
    assert [e.author for e in employees_said(first.events)] == ["pm"]
    assert [e.author for e in employees_said(newer.events)] == ["designer"]
    assert newer.status == "done" and status.wait_reason is None


async def test_coalesce_joins_one_persons_quick_messages_into_one_turn(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk("coalesce", window=0.5)
    async with await Staffroom.open(settings=settings) as staff:
        gateway, room = await reopened(staff, "r6", scenario)
        await gateway.session(room.key)
        posts = [
            asyncio.create_task(gateway.post(room.key, t, author="alice", message_id=f"c{n}"))
            for n, t in enumerate(["@pm first part", "second part", "third part"])
        ]
        results = await asyncio.gather(*posts)
        await gateway.close()
        history = room.history()
    assert [r.status for r in results] == ["done", "coalesced", "coalesced"]
    assert {r.merged_into for r in results[1:]} == {"c0"}
    (message,) = humans(history)
    assert message.content == "@pm first part\nsecond part\nthird part"
    assert message.meta["merges"] == ["c1", "c2"]
    assert len(employees_said(history)) == 1


async def test_a_message_accepted_before_a_crash_runs_when_the_gateway_opens(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    await opened(settings, "r7", scenario)
    # What a killed process leaves: the message in the ledger, queued, never run.
    async with stored_ledger(settings) as ledger:
        await ledger.claim(
            "room:r7",
            "msg:lost-1",
            message_id="lost-1",
            author="bob",
            text="@pm ping",
            state="queued",
        )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        replay = await gateway.post("room:r7", "@pm ping", author="bob", message_id="lost-1")
        await gateway.close()
    assert replay.duplicate and replay.status == "done"
    assert employees_said(replay.events)


async def test_bad_input_is_refused_before_anything_is_stored(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r8", scenario)
        with pytest.raises(InputError, match="text"):
            await gateway.post(room.key, "   ", author="alice")
        with pytest.raises(InputError):
            await gateway.post(room.key, "hi", author="../etc")
        await gateway.close()


async def test_reopening_a_room_with_another_scenario_is_refused_and_changes_nothing(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario, other = desk("enqueue"), desk("reject")
    async with await Staffroom.open(settings=settings) as staff:
        gateway, room = await reopened(staff, "r9", scenario)
        with pytest.raises(InputError, match="runs scenario 'desk-enqueue'"):
            await gateway.open_room("r9", other)
        same = await gateway.open_room("r9", scenario)
        result = await gateway.post(room.key, "@pm still here?", author="alice")
        await gateway.close()
    assert same.scenario_id == "desk-enqueue" and result.status == "done"
    async with await Staffroom.open(settings=settings) as staff:  # a new process too
        gateway = await Gateway.open(staff)
        with pytest.raises(InputError, match="runs scenario 'desk-enqueue'"):
            await gateway.open_room("r9", other)
        await gateway.close()


async def test_both_names_of_a_message_replay_it(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r10", scenario)
        first = await gateway.post(
            room.key, "hi", author="alice", message_id="om_1", idempotency_key="k"
        )
        by_key = await gateway.post(room.key, "hi", author="alice", idempotency_key="k")
        by_key_other_id = await gateway.post(
            room.key, "hi", author="alice", message_id="om_2", idempotency_key="k"
        )
        by_id = await gateway.post(room.key, "hi", author="alice", message_id="om_1")
        await gateway.close()
        history = room.history()
    assert all(r.duplicate for r in (by_key, by_key_other_id, by_id))
    assert {r.message_id for r in (by_key, by_key_other_id, by_id)} == {first.message_id}
    assert [e.meta["client_id"] for e in humans(history)] == ["om_1"]


async def test_an_employee_id_is_not_a_persons_name(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r11", scenario)
        with pytest.raises(InputError, match="employee"):
            await gateway.post(room.key, "I am pm now", author="pm")
        await gateway.close()


async def test_coalesced_parts_keep_their_result_across_a_crash(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk("coalesce")
    await opened(settings, "r12", scenario)
    # What a process killed inside the coalesce window leaves behind.
    async with stored_ledger(settings) as ledger:
        claim = {"author": "bob", "state": "queued"}
        await ledger.claim("room:r12", "msg:c0", message_id="c0", text="@pm one\ntwo", **claim)
        await ledger.claim("room:r12", "msg:c1", message_id="c1", text="two", **claim)
        await ledger.update("room:r12", "c1", state="coalesced", merged_into="c0")
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        part = await gateway.post("room:r12", "two", author="bob", message_id="c1")
        await gateway.close()
    assert part.duplicate and part.status == "coalesced" and part.merged_into == "c0"
    assert humans(part.events)[0].meta["merges"] == ["c1"]
    assert employees_said(part.events)


async def test_with_selector_none_employees_answer_only_when_mentioned(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk(extra="  selector: none\n")
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r13", scenario)
        chatter = await gateway.post(room.key, "lunch at noon?", author="alice")
        asked = await gateway.post(room.key, "@engineer is the build green?", author="bob")
        await gateway.close()
    assert chatter.status == "done" and employees_said(chatter.events) == []
    assert [e.author for e in employees_said(asked.events)] == ["engineer"]
