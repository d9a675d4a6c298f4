"""PostgreSQL restarted in the middle of a run: the room pauses and goes on, nothing lost or
doubled (the pool replaces the dropped connections; what could not be recorded runs again)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import httpx
from paths import ROOT
from pg_cluster import ThrowawayCluster
from projects import desk, project_with
from psycopg import OperationalError
from psycopg_pool import PoolTimeout

from framework import EventKind, Settings, Staffroom
from framework.database.leases import LEASE_MIGRATIONS, Leases
from framework.database.migrations import apply_migrations
from framework.database.pool import Database
from framework.serving import Gateway
from framework.serving.pg_ledger import REPLICA_PREFIX
from framework.serving.replicas import Presence

SCENARIO = desk(1.5)


async def test_a_run_cut_by_a_database_restart_is_answered_once(
    tmp_path: Path, pg_cluster: ThrowawayCluster
) -> None:
    project = project_with(tmp_path / "project", {"desk": SCENARIO})
    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=project,
        allow_network=False,
        database=pg_cluster.new_database(),
        lease_seconds=2,
    )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r1", "desk")
        queued = await gateway.post(
            room.key, "@pm hello", author="alice", message_id="m1", wait=False
        )
        assert queued.status == "queued"
        while not any(e.author == "alice" for e in room.history()):
            await asyncio.sleep(0.05)  # stored: pm's model call (1.5 s) is under way
        await asyncio.to_thread(pg_cluster.cluster.restart)
        # The same message again: its first result, once the room has answered it.
        for _ in range(200):
            try:
                again = await gateway.post(
                    room.key, "@pm hello", author="alice", message_id="m1", timeout=1
                )
            except (OperationalError, PoolTimeout):  # still down: a client would retry
                await asyncio.sleep(0.2)
                continue
            if again.status == "done":
                break
        await gateway.close()
    assert again.status == "done" and again.duplicate
    said = [e.author for e in room.history() if e.kind == EventKind.MESSAGE]
    assert said == ["alice", "pm"], said


@asynccontextmanager
async def served(
    tmp_path: Path, pg_cluster: ThrowawayCluster, rate_limit: int | None, *, lifespan: bool
) -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, str]]]:
    """The server app in this process on a database of ``pg_cluster`` (with its lifespan's
    shared state when ``lifespan``): a client of it, and the headers of a token with
    ``rate_limit`` (None: none, so no rate bucket is read)."""
    from framework.surfaces.server.app import create_app
    from framework.surfaces.server.config import ServerConfig, TokenGrant

    settings = Settings(
        data_dir=tmp_path / "data",
        project_dir=ROOT,
        allow_network=False,
        database=pg_cluster.new_database(),
    )
    token = "t" * 20
    grant = (
        TokenGrant("t", token)
        if rate_limit is None
        else TokenGrant("t", token, rate_limit=rate_limit)
    )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        app = create_app(gateway, ServerConfig(tokens=(grant,)))
        transport = httpx.ASGITransport(app=app)
        async with AsyncExitStack() as stack:
            api = await stack.enter_async_context(
                httpx.AsyncClient(transport=transport, base_url="http://t")
            )
            if lifespan:
                await stack.enter_async_context(app.router.lifespan_context(app))
            yield api, {"Authorization": f"Bearer {token}"}
        await gateway.close()


async def while_down(
    pg_cluster: ThrowawayCluster, request: Awaitable[httpx.Response]
) -> httpx.Response:
    """``request``'s answer while PostgreSQL is stopped (started again after it)."""
    await asyncio.to_thread(pg_cluster.cluster.stop)
    try:
        return await request
    finally:
        await asyncio.to_thread(pg_cluster.cluster.start)


async def test_requests_while_the_database_is_down_get_503_with_retry_after(
    tmp_path: Path, pg_cluster: ThrowawayCluster
) -> None:
    async with served(tmp_path, pg_cluster, 100, lifespan=True) as (api, headers):
        body = {"text": "hello", "message_id": "down-1"}
        posting = api.post("/api/sessions/room:none/messages", json=body, headers=headers)
        answer = await while_down(pg_cluster, posting)
    assert answer.status_code == 503, answer.text
    assert answer.headers["Retry-After"] == "2"
    assert answer.json()["error"]["type"] == "database_unavailable"


async def test_a_store_that_cannot_reach_the_database_answers_503_with_retry_after(
    tmp_path: Path, pg_cluster: ThrowawayCluster
) -> None:
    # The SOP store words its own StorageError ("cannot read the SOP store ..."), raised from
    # psycopg's: still an outage, so a client is told to retry, not to run staffroom doctor.
    async with served(tmp_path, pg_cluster, None, lifespan=False) as (api, headers):
        assert (await api.get("/api/sops", headers=headers)).status_code == 200
        answer = await while_down(pg_cluster, api.get("/api/sops", headers=headers))
    assert answer.status_code == 503, answer.text
    assert answer.json()["error"]["type"] == "database_unavailable", answer.text
    assert answer.headers["Retry-After"] == "2"


async def test_a_replica_is_present_again_after_an_outage_longer_than_its_lease(
    pg_cluster: ThrowawayCluster,
) -> None:
    # Without its presence lease every other replica takes this one's queued messages as a
    # dead replica's, for good: so it must take the lease again once the database is back,
    # even when its first try came while the database was still down.
    db = await Database.open(pg_cluster.new_database(), max_size=2, wait=0.3)
    try:
        await apply_migrations(db, LEASE_MIGRATIONS)
        leases = Leases(db, seconds=0.5)
        swept = asyncio.Event()

        async def sweep() -> None:
            swept.set()

        presence = Presence(leases, db.owner, 0.5, sweep)
        await presence.start()
        presence.sweep_every()
        name = f"{REPLICA_PREFIX}{db.owner}"
        await asyncio.to_thread(pg_cluster.cluster.stop)
        await asyncio.sleep(2)  # four lease periods down: the lease lapses, retakes fail
        await asyncio.to_thread(pg_cluster.cluster.start)
        deadline = time.monotonic() + 10
        while not await _holds(leases, name):
            assert time.monotonic() < deadline, "the replica never took its presence again"
            await asyncio.sleep(0.1)
        swept.clear()
        await asyncio.wait_for(swept.wait(), timeout=5)  # and it sweeps again
        await presence.stop_sweeping()
        await presence.leave()
    finally:
        await db.close()


async def _holds(leases: Leases, name: str) -> bool:
    try:
        return await leases.holder(name) is not None
    except (OperationalError, PoolTimeout):  # the pool still replacing dropped connections
        return False
