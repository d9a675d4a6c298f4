"""The webhook outbox: replicas that both see an event deliver it once, and a delivery a
crashed replica had recorded but not made is made when another dispatcher starts."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from framework.database.pool import Database
from framework.serving.webhook_outbox import PgWebhookOutbox
from framework.serving.webhooks import WebhookDispatcher, WebhookTarget
from framework.sessions.events import Event, EventKind, make_event


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[str]]]:
    """A 127.0.0.1 endpoint answering 200; its URL and the event ids it got, in order."""
    got: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append(json.loads(body)["event"]["id"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    server.shutdown()
    server.server_close()


@pytest.fixture
async def pools(pg_url: str) -> AsyncIterator[list[Database]]:
    """Three replicas' pools on one database."""
    opened = [await Database.open(pg_url, max_size=2) for _ in range(3)]
    yield opened
    for db in opened:
        await db.close()


def said(text: str) -> Event:
    return make_event("room:support-1", EventKind.MESSAGE, "pm", text, meta={})


async def dispatcher(
    db: Database, url: str, tmp_path: Path, *, stale_after: float = 600.0
) -> WebhookDispatcher:
    target = WebhookTarget(sessions="room:*", url=url, secret="s" * 16, base_delay=0.01)
    outbox = await PgWebhookOutbox.open(db, stale_after=stale_after)
    return WebhookDispatcher([target], failures=tmp_path / "failed.jsonl", outbox=outbox)


async def test_two_replicas_seeing_one_event_deliver_it_once(
    pools: list[Database], receiver: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, got = receiver
    replicas = [await dispatcher(db, url, tmp_path) for db in pools[:2]]
    events = [said("one"), said("two")]
    for replica in replicas:
        await replica.start()
    for event in events:
        for replica in replicas:
            await replica.listener(event.session, event)
    for replica in replicas:
        await replica.close()
    assert sorted(got) == sorted(e.id for e in events), "each event once"


async def test_a_crashed_replicas_recorded_delivery_is_made_once_later(
    pools: list[Database], receiver: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, got = receiver
    crashed = await dispatcher(pools[0], url, tmp_path)
    event = said("lost in a crash")
    await crashed.listener(event.session, event)  # recorded, queued, never started: a crash
    assert got == []

    for db in pools[1:]:  # two replicas start after it; one takes the orphan over
        survivor = await dispatcher(db, url, tmp_path, stale_after=0.0)
        await survivor.start()
        await survivor.close()
    assert got == [event.id]
    assert not (tmp_path / "failed.jsonl").exists()


async def test_a_running_replica_takes_over_a_delivery_a_replica_died_with(
    pools: list[Database], receiver: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, got = receiver
    survivor = await dispatcher(pools[1], url, tmp_path, stale_after=0.0)
    survivor.sweep_every = 0.05
    await survivor.start()
    crashed = await dispatcher(pools[0], url, tmp_path)
    event = said("recorded, then the replica died")
    await crashed.listener(event.session, event)
    deadline = asyncio.get_running_loop().time() + 5
    while not got and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)  # until the survivor's next sweep finds it
    await survivor.close()
    assert got == [event.id]
