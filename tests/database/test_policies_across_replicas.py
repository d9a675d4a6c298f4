"""Double texting across replicas: posts to two replicas of one room meet the scenario's
policy as posts to one replica do, and run in the order the shared ledger took them.

Two replicas here are two Staffrooms in one process, each with its own pool, lease owner and
gateway, on one data folder and one database (two OS processes would run the same SQL; a
second import of the framework costs seconds)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

from projects import desk, project_with

from framework import EventKind, Settings, Staffroom
from framework.serving import Gateway
from framework.sessions.events import Event


@asynccontextmanager
async def two_replicas(
    tmp_path: Path, pg_url: str, policy: str, delay: float, lease_seconds: float = 15
) -> AsyncIterator[tuple[Gateway, Gateway, str]]:
    """Replicas ``a`` and ``b`` of a project whose desk room (entered, at rest) has
    ``policy``; yields both gateways and the room's key."""
    employees = ("pm", "engineer", "designer")
    policies = f"double_texting: {policy}\ncoalesce_window: 0.6"
    text = desk(delay, employees=employees, settings=policies)
    project = project_with(tmp_path / "project", {"desk": text})
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=project,
        allow_network=False,
        database=pg_url,
        lease_seconds=lease_seconds,
    )
    async with AsyncExitStack() as stack:
        gateways = []
        for owner in ("a", "b"):
            staff = await stack.enter_async_context(
                await Staffroom.open(settings=settings, owner=owner)
            )
            gateway = await Gateway.open(staff)
            stack.push_async_callback(gateway.close)
            gateways.append(gateway)
        a, b = gateways
        room = await a.open_room("r1", "desk")
        await a._lanes[room.key].wait_idle()  # its entry written: b finds the room stored
        yield a, b, room.key


def said(history: list[Event]) -> list[tuple[str, str]]:
    """(author, text or client id) of every message, in log order."""
    return [
        (e.author, e.meta.get("client_id") or str(e.content))
        for e in history
        if e.kind == EventKind.MESSAGE
    ]


async def history(gateway: Gateway, key: str) -> list[Event]:
    return (await gateway.session(key)).history()


async def test_posts_to_two_replicas_run_in_the_ledgers_order_one_at_a_time(
    tmp_path: Path, pg_url: str
) -> None:
    async with two_replicas(tmp_path, pg_url, "enqueue", 0.15) as (a, b, key):
        order = ["m0", "m1", "m2", "m3", "m4", "m5"]
        for n, mid in enumerate(order):  # accepted in this order, alternately
            gateway = (a, b)[n % 2]
            await gateway.post(key, f"@pm question {n}", author="alice", message_id=mid, wait=False)
        # Each post again, waiting: the redelivery's answer is the first run's.
        again = [
            (a, b)[n % 2].post(key, f"@pm question {n}", author="alice", message_id=mid)
            for n, mid in enumerate(order)
        ]
        results = await asyncio.gather(*again)
        log = said(await history(a, key))
    assert [r.status for r in results] == ["done"] * 6
    assert all(r.duplicate for r in results)
    humans = [what for who, what in log if who == "alice"]
    assert humans == order, "not the order the ledger took them in"
    # Each question answered before the next one is stored: the runs never interleave.
    assert [who for who, _ in log] == ["alice", "pm"] * 6


async def test_reject_refuses_a_post_to_one_replica_while_the_other_answers(
    tmp_path: Path, pg_url: str
) -> None:
    async with two_replicas(tmp_path, pg_url, "reject", 0.5) as (a, b, key):
        busy = asyncio.create_task(a.post(key, "@pm one", author="alice", message_id="m1"))
        await asyncio.sleep(0.2)  # a's run is under way
        refused = await b.post(key, "@pm two", author="bob", message_id="m2")
        answered = await busy
        retried = await b.post(key, "@pm two", author="bob", message_id="m2")
        log = said(await history(b, key))
    assert refused.status == "rejected" and refused.room is not None
    assert answered.status == "done"
    assert retried.status == "done" and not retried.duplicate
    assert log == [("alice", "m1"), ("pm", log[1][1]), ("bob", "m2"), ("pm", log[3][1])]


async def test_interrupt_from_another_replica_stops_the_run_between_turns(
    tmp_path: Path, pg_url: str
) -> None:
    async with two_replicas(tmp_path, pg_url, "interrupt", 0.5) as (a, b, key):
        long = asyncio.create_task(
            a.post(key, "@pm @engineer @designer all of you", author="alice", message_id="l")
        )
        await asyncio.sleep(0.25)  # pm's turn is under way on a
        newer = await b.post(key, "@designer only you", author="alice", message_id="n")
        first = await long
    assert first.status == "interrupted"
    wait = first.events[-1]
    assert wait.kind == EventKind.WAIT and wait.content["reason"] == "interrupted"
    assert [e.author for e in first.events if e.kind == EventKind.MESSAGE][1:] == ["pm"]
    assert newer.status == "done"
    assert [e.author for e in newer.events if e.kind == EventKind.MESSAGE] == ["alice", "designer"]


async def test_coalesce_joins_one_persons_posts_to_both_replicas_into_one_turn(
    tmp_path: Path, pg_url: str
) -> None:
    async with two_replicas(tmp_path, pg_url, "coalesce", 0.0) as (a, b, key):
        parts = [(a, "c0", "@pm first part"), (b, "c1", "second part"), (a, "c2", "third part")]
        posts = []
        for gateway, mid, text in parts:
            posts.append(
                asyncio.create_task(gateway.post(key, text, author="alice", message_id=mid))
            )
            await asyncio.sleep(0.1)  # well inside the window
        results = await asyncio.gather(*posts)
        events = await history(a, key)
    assert [r.status for r in results] == ["done", "coalesced", "coalesced"]
    assert {r.merged_into for r in results[1:]} == {"c0"}
    (message,) = [e for e in events if e.kind == EventKind.MESSAGE and e.meta.get("human")]
    assert message.content == "@pm first part\nsecond part\nthird part"
    assert message.meta["merges"] == ["c1", "c2"]
    assert [e.author for e in events if e.kind == EventKind.MESSAGE] == ["alice", "pm"]


async def test_a_stopping_replica_hands_back_what_waits_behind_the_other_replicas_run(
    tmp_path: Path, pg_url: str
) -> None:
    async with two_replicas(tmp_path, pg_url, "enqueue", 1.0, lease_seconds=1) as (a, b, key):
        running = asyncio.create_task(b.post(key, "@pm slow one", author="alice", message_id="m1"))
        await asyncio.sleep(0.3)  # b runs m1
        queued = await a.post(key, "@pm after it", author="bob", message_id="m2", wait=False)
        assert queued.status == "queued"
        state = await a.status(key)  # what either replica shows: the ledger's, not its own
        assert state.busy and state.queued == 1, (state.busy, state.queued)
        started = asyncio.get_running_loop().time()
        await a.close()  # a stops (SIGTERM): m2 waits behind b's run, so it is handed back
        stopped_in = asyncio.get_running_loop().time() - started
        assert (await running).status == "done"
        answered = await b.post(key, "@pm after it", author="bob", message_id="m2")
        log = said(await history(b, key))
    assert stopped_in < 1.0, "the stopping replica waited for the other's run"
    assert answered.status == "done" and answered.duplicate  # run by b, from the shared queue
    assert [who for who, _ in log] == ["alice", "pm", "bob", "pm"]
