"""The fenced checkpointer: a replica that lost a room's lease cannot write its checkpoints.

The "before" is langgraph #8796 as it is: two writers on one thread with the plain
AsyncPostgresSaver both succeed and fork the chain. The "after": the same two writers, one of
them paused past its lease, and the stale one is refused with nothing written.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph

from framework.database.fenced_checkpoints import FencedPostgresSaver, open_checkpoints
from framework.database.leases import Leases
from framework.database.pool import Database
from framework.errors import LeaseLostError

ROOM = "tech-article:2026-12-04"


@pytest.fixture
async def replicas(pg_url: str) -> AsyncIterator[list[tuple[Database, FencedPostgresSaver]]]:
    """Two replicas on one database, each with its own pool, owner id and checkpointer."""
    dbs = [await Database.open(pg_url, max_size=3) for _ in range(2)]
    try:
        yield [(db, await open_checkpoints(db)) for db in dbs]
    finally:
        for db in dbs:
            await db.close()


def config(checkpoint_id: str | None = None) -> RunnableConfig:
    configurable: dict[str, Any] = {"thread_id": ROOM, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def step(note: str) -> Checkpoint:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"note": note}
    checkpoint["channel_versions"] = {"note": 1}
    return checkpoint


async def write_next(saver: AsyncPostgresSaver, parent: str | None, note: str) -> str:
    """One turn's checkpoint on top of ``parent`` (what a replica read as the latest)."""
    checkpoint = step(note)
    await saver.aput(config(parent), checkpoint, {"source": "loop", "step": 1}, {"note": 1})
    return checkpoint["id"]


async def chain(db: Database) -> list[dict[str, Any]]:
    async with db.connection() as conn:
        cursor = await conn.execute(
            "SELECT checkpoint_id, parent_checkpoint_id, checkpoint->'channel_values'->>'note'"
            " AS note FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
            (ROOM,),
        )
        return await cursor.fetchall()


def forks(rows: list[dict[str, Any]]) -> list[str]:
    parents = [row["parent_checkpoint_id"] for row in rows if row["parent_checkpoint_id"]]
    return sorted({p for p in parents if parents.count(p) > 1})


async def until_expired(leases: Leases) -> None:
    deadline = time.monotonic() + 5
    while await leases.holder(ROOM) is not None:
        assert time.monotonic() < deadline, "the lease never expired"
        await asyncio.sleep(0.05)


async def test_before_two_plain_writers_on_one_thread_fork_the_chain(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, _), (db_b, _) = replicas
    plain_a, plain_b = AsyncPostgresSaver(db_a.pool), AsyncPostgresSaver(db_b.pool)
    root = await write_next(plain_a, None, "root")
    # A is paused mid-turn; B takes the room and writes its turn; A wakes up and writes its.
    await write_next(plain_b, root, "B's turn")
    await write_next(plain_a, root, "A's stale turn")
    assert forks(await chain(db_a)) == [root], "both succeeded: the chain forked (#8796)"


async def test_after_a_paused_replica_is_refused_and_the_chain_does_not_fork(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, saver_a), (db_b, saver_b) = replicas
    leases_a, leases_b = Leases(db_a, seconds=0.4), Leases(db_b, seconds=30)
    lease_a = await leases_a.acquire(ROOM)
    assert lease_a is not None
    saver_a.fence(ROOM, lease_a)
    root = await write_next(saver_a, None, "root")

    await until_expired(leases_b)  # A is paused (SIGSTOP) past its lease
    lease_b = await leases_b.acquire(ROOM)
    assert lease_b is not None and lease_b.epoch == lease_a.epoch + 1
    saver_b.fence(ROOM, lease_b)
    await write_next(saver_b, root, "B's turn")

    # A wakes up, still fenced by its old lease as far as it knows, and writes its turn.
    with pytest.raises(LeaseLostError, match=f"replica {db_b.owner} runs it now"):
        await write_next(saver_a, root, "A's stale turn")
    with pytest.raises(LeaseLostError):
        await saver_a.aput_writes(config(root), [("note", "A's tool result")], "task-of-A")
    with pytest.raises(LeaseLostError):
        await saver_a.adelete_thread(ROOM)

    rows = await chain(db_a)
    assert [row["note"] for row in rows] == ["root", "B's turn"], "nothing of A's was stored"
    assert forks(rows) == []
    async with db_a.connection() as conn:
        writes = await (await conn.execute("SELECT task_id FROM checkpoint_writes")).fetchall()
    assert writes == []


class SlowSerializer(JsonPlusSerializer):
    """Serialises a checkpoint's blobs only once let go: LangGraph does that before anything
    of the write is sent (the fence goes with the statements, in one round trip)."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.go = threading.Event(), threading.Event()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if obj == ["slow"]:
            self.started.set()
            self.go.wait(5)
        return super().dumps_typed(obj)


HOLD_KEY = 4343
HOLD_INSERTS = f"""
CREATE FUNCTION test_hold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared({HOLD_KEY});
    RETURN NEW;
END $$;
CREATE TRIGGER test_hold BEFORE INSERT ON checkpoints
    FOR EACH ROW EXECUTE FUNCTION test_hold();
"""
"""While the test holds the advisory lock, a checkpoint's insert waits in the database, after
its write's fence has taken the lease row."""


async def _held_in_the_database(db: Database) -> None:
    deadline = time.monotonic() + 5
    while True:
        async with db.connection() as conn:
            row = await (
                await conn.execute(
                    "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                )
            ).fetchone()
        if row is not None and row["n"]:
            return
        assert time.monotonic() < deadline, "the write never reached the database"
        await asyncio.sleep(0.02)


async def test_a_takeover_waits_for_the_write_in_flight_and_follows_it(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, saver_a), (db_b, saver_b) = replicas
    leases_a, leases_b = Leases(db_a, seconds=0.3), Leases(db_b, seconds=30)
    lease_a = await leases_a.acquire(ROOM)
    assert lease_a is not None
    saver_a.fence(ROOM, lease_a)
    async with db_b.connection() as hold:
        await hold.execute(HOLD_INSERTS)
        await hold.execute("SELECT pg_advisory_lock(%s)", (HOLD_KEY,))
        checkpoint = step("A's slow write")
        writing = asyncio.create_task(saver_a.aput(config(), checkpoint, {}, {"note": 1}))
        try:
            await _held_in_the_database(db_b)
            await until_expired(leases_b)  # A's lease ran out while its write is in flight
            taking = asyncio.create_task(leases_b.acquire(ROOM))
            done, _ = await asyncio.wait([taking], timeout=0.2)
            assert not done, "the takeover waits for the write whose fence took the row"
        finally:
            await hold.execute("SELECT pg_advisory_unlock(%s)", (HOLD_KEY,))
    await writing
    lease_b = await taking
    assert lease_b is not None and lease_b.epoch == 2
    saver_b.fence(ROOM, lease_b)
    latest = await saver_b.aget_tuple(config())
    assert latest is not None and latest.checkpoint["id"] == checkpoint["id"], "B sees it"
    await write_next(saver_b, checkpoint["id"], "B's turn")
    assert forks(await chain(db_b)) == []


async def test_a_write_whose_lease_ran_out_before_it_was_sent_is_refused(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, _), (db_b, saver_b) = replicas
    serde = SlowSerializer()
    saver_a = FencedPostgresSaver(db_a.pool, serde=serde)
    leases_a, leases_b = Leases(db_a, seconds=0.3), Leases(db_b, seconds=30)
    lease_a = await leases_a.acquire(ROOM)
    assert lease_a is not None
    saver_a.fence(ROOM, lease_a)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"draft": ["slow"]}
    checkpoint["channel_versions"] = {"draft": 1}
    writing = asyncio.create_task(saver_a.aput(config(), checkpoint, {}, {"draft": 1}))
    try:
        assert await asyncio.to_thread(serde.started.wait, 5)
        await until_expired(leases_b)  # A's lease ran out before its write was sent
        lease_b = await asyncio.wait_for(leases_b.acquire(ROOM), 5)  # nothing to wait for
        assert lease_b is not None and lease_b.epoch == 2
    finally:
        serde.go.set()
    with pytest.raises(LeaseLostError, match="lost its lease"):
        await writing
    saver_b.fence(ROOM, lease_b)
    assert await saver_b.aget_tuple(config()) is None, "nothing of A's write was stored"
    await write_next(saver_b, None, "B's turn")
    assert [row["note"] for row in await chain(db_b)] == ["B's turn"]


async def test_a_write_to_a_room_this_replica_holds_no_lease_on_is_refused(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, saver_a), _ = replicas
    with pytest.raises(LeaseLostError, match="holds no lease"):
        await write_next(saver_a, None, "root")
    with pytest.raises(LeaseLostError):
        await saver_a.aprune([ROOM], strategy="delete")
    assert await chain(db_a) == []


async def test_the_lease_holder_can_delete_and_prune_its_room(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, saver_a), _ = replicas
    async with Leases(db_a, seconds=30).hold(ROOM, wait=0, fence=saver_a):
        parent = None
        for note in ("one", "two", "three"):
            parent = await write_next(saver_a, parent, note)
        await saver_a.aprune([ROOM], strategy="keep_latest")
        assert [row["note"] for row in await chain(db_a)] == ["three"]
        await saver_a.adelete_thread(ROOM)
        assert await chain(db_a) == []


class Notes(TypedDict):
    notes: Annotated[list[str], operator.add]


def tiny_graph(saver: FencedPostgresSaver) -> Any:
    builder = StateGraph(Notes)
    builder.add_node("draft", lambda state: {"notes": ["drafted"]})
    builder.add_node("review", lambda state: {"notes": ["reviewed"]})
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver)


async def test_a_graph_runs_under_its_lease_and_fails_loudly_once_the_lease_is_taken(
    replicas: list[tuple[Database, FencedPostgresSaver]],
) -> None:
    (db_a, saver_a), (db_b, saver_b) = replicas
    graph_a = tiny_graph(saver_a)
    async with Leases(db_a, seconds=30).hold(ROOM, wait=0, fence=saver_a):
        first = await graph_a.ainvoke({"notes": ["brief"]}, config())
        assert first["notes"] == ["brief", "drafted", "reviewed"]
        resumed = await graph_a.ainvoke({"notes": ["more"]}, config())
        assert resumed["notes"] == ["brief", "drafted", "reviewed", "more", "drafted", "reviewed"]

        # Replica B takes the room over (A was paused past its lease).
        async with db_b.connection() as conn:
            await conn.execute("UPDATE staffroom_leases SET expires_at = now()")
        async with Leases(db_b, seconds=30).hold(ROOM, wait=0, fence=saver_b):
            # Reads are not fenced: B sees the room's state where A left it.
            state = await tiny_graph(saver_b).aget_state(config())
            assert state.values["notes"][-1] == "reviewed" and len(state.values["notes"]) == 6
            with pytest.raises(LeaseLostError):
                await graph_a.ainvoke({"notes": ["stale"]}, config())
            after = await tiny_graph(saver_b).aget_state(config())
            assert after.values == state.values, "A's stale run wrote nothing"


async def test_replicas_starting_together_set_the_tables_up_once(pg_url: str) -> None:
    dbs = [await Database.open(pg_url, max_size=2) for _ in range(3)]
    try:
        savers = await asyncio.gather(*(open_checkpoints(db) for db in dbs))
        assert all(isinstance(saver, FencedPostgresSaver) for saver in savers)
        async with dbs[0].connection() as conn:
            tables = await (
                await conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
                )
            ).fetchall()
            versions = await (await conn.execute("SELECT v FROM checkpoint_migrations")).fetchall()
        assert [t["tablename"] for t in tables] == [
            "checkpoint_blobs",
            "checkpoint_migrations",
            "checkpoint_writes",
            "checkpoints",
            "staffroom_leases",
            "staffroom_migrations",
        ]
        assert len(versions) == len(AsyncPostgresSaver.MIGRATIONS)
    finally:
        for db in dbs:
            await db.close()


async def test_a_write_the_database_refuses_halfway_keeps_nothing_and_the_connection_works(
    pg_url: str,
) -> None:
    # A checkpoint write is one transaction, its statements sent together: the blobs of a
    # checkpoint whose own row PostgreSQL refuses (jsonb holds no NUL) must not be kept.
    db = await Database.open(pg_url, max_size=1)  # one connection: the next write reuses it
    try:
        saver = await open_checkpoints(db)
        lease = await Leases(db, seconds=30).acquire(ROOM)
        assert lease is not None
        saver.fence(ROOM, lease)
        checkpoint = empty_checkpoint()
        # A list is stored as a blob, a string inline in the checkpoint's own row.
        checkpoint["channel_values"] = {"notes": ["kept as a blob"], "note": "a\x00b"}
        checkpoint["channel_versions"] = {"notes": 1, "note": 1}
        with pytest.raises(Exception, match="0000"):
            await saver.aput(config(), checkpoint, {"source": "loop"}, {"notes": 1, "note": 1})
        async with db.connection() as conn:
            for table in ("checkpoints", "checkpoint_blobs"):
                row = await (await conn.execute(f"SELECT count(*) AS n FROM {table}")).fetchone()
                assert row is not None and row["n"] == 0, f"{table}: half a write was kept"
        root = await write_next(saver, None, "root")
        assert [row["note"] for row in await chain(db)] == ["root"] and root
    finally:
        await db.close()
