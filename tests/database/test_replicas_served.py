"""Two `staffroom serve` replicas on one data folder and one database, as real processes:
a room opened on one is found by the other as soon as the open answers, a replica frozen
(SIGSTOP) past its lease writes nothing once it wakes, a killed one's queued message is
answered by the other, and a stream on one replica shows a room run on the other.

The model is the offline simulator with a delay, so a run lasts long enough to be cut off.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from projects import desk, project_with
from serve_process import ServeProcess, wait_until

from framework.sessions.events import EventKind
from framework.sessions.jsonl_log import JsonlLog

LEASE = 3.0
"""Seconds a lease lasts unrenewed (short, so a takeover comes quickly)."""

SCENARIO = desk(4, settings="double_texting: enqueue")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return project_with(tmp_path / "project", {"desk": SCENARIO})


@pytest.fixture
def replicas(tmp_path: Path, project: Path, pg_url: str) -> Iterator[list[ServeProcess]]:
    """Replicas A and B (not started) on one data folder and database, leases of LEASE s."""
    config = tmp_path / "server.yaml"
    text = f"database:\n  url_env: STAFFROOM_DATABASE_URL\n  lease_seconds: {LEASE}\n"
    config.write_text(text, encoding="utf-8")
    env = {"STAFFROOM_DATABASE_URL": pg_url}
    args = ["--no-auth", "--config", str(config), "--project", str(project)]
    made = [
        ServeProcess(tmp_path / "data", tmp_path / f"serve-{name}.log", args, env)
        for name in ("a", "b")
    ]
    yield made
    for server in made:
        if server.proc is not None and server.proc.poll() is None:
            os.kill(server.proc.pid, signal.SIGCONT)  # a test that failed mid-freeze
            server.stop()


def lease_owner(url: str, session: str) -> str | None:
    """Who holds ``session``'s lease now (None: nobody)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT owner FROM staffroom_leases WHERE session = %s AND expires_at > now()",
            (session,),
        ).fetchone()
    return None if row is None else str(row[0])


def ledger_state(url: str, session: str, message_id: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT state FROM staffroom_ingest WHERE session = %s AND message_id = %s",
            (session, message_id),
        ).fetchone()
    return None if row is None else str(row[0])


def post(server: ServeProcess, text: str, message_id: str, *, wait: bool) -> dict[str, Any]:
    body = {"text": text, "author": "alice", "message_id": message_id, "wait": wait}
    with server.client() as client:
        answer = client.post("/api/sessions/room:r1/messages", json=body)
    assert answer.status_code in (200, 202), answer.text
    return dict(answer.json())


def open_room(server: ServeProcess) -> None:
    with server.client() as client:
        assert client.put("/api/rooms/r1", json={"scenario": "desk"}).status_code == 200


def history(data: Path) -> list[Any]:
    return JsonlLog(data / "sessions" / "room:r1.jsonl").read_all()


def said_by(data: Path, author: str) -> bool:
    return any(e.author == author for e in history(data))


def answered(data: Path) -> dict[str, int]:
    """How many messages each employee posted, and how many each person did."""
    counts: dict[str, int] = {}
    for event in history(data):
        if event.kind == EventKind.MESSAGE:
            counts[event.author] = counts.get(event.author, 0) + 1
    return counts


def test_a_room_opened_on_one_replica_is_found_by_the_other_once_opened(
    replicas: list[ServeProcess], pg_url: str
) -> None:
    a, b = (server.start() for server in replicas)
    # Another owner holds the new room's lease for a moment, so B cannot write its entry yet:
    # A finds a room only by that entry, so B's open must not answer before it is written.
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO staffroom_leases (session, owner, epoch, expires_at, taken_at) "
            "VALUES ('room:r1', 'elsewhere', 1, now() + interval '2 seconds', now())"
        )
    open_room(b)
    assert post(a, "@pm are you there", "m1", wait=True)["status"] == "done"


def test_a_replica_frozen_past_its_lease_writes_nothing_when_it_wakes(
    replicas: list[ServeProcess], pg_url: str, tmp_path: Path
) -> None:
    a, b = (server.start() for server in replicas)
    open_room(a)
    post(a, "@pm first question", "m1", wait=False)
    wait_until(lambda: said_by(tmp_path / "data", "alice"), "A to store m1")
    assert a.proc is not None
    os.kill(a.proc.pid, signal.SIGSTOP)  # mid-run: pm's model call takes 4 s
    try:
        wait_until(lambda: lease_owner(pg_url, "room:r1") is None, "A's lease to expire")
        # B takes the room (a busy machine may starve a replica past its lease too: then
        # the message goes back to the queue and runs again, so only its end is waited for).
        post(b, "@engineer second question", "m2", wait=True)
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)
    wait_until(lambda: ledger_state(pg_url, "room:r1", "m2") == "done", "m2 answered", seconds=60)
    # A wakes with its reply to m1 in hand: the log refuses it, m1 goes back to the queue
    # and one replica (whichever sweeps first) answers it under its own lease.
    wait_until(lambda: ledger_state(pg_url, "room:r1", "m1") == "done", "m1 answered", seconds=60)
    a_log = tmp_path / "serve-a.log"
    refused = "staffroom.gateway: run of m1 in room:r1 gave up the room"
    wait_until(lambda: refused in a_log.read_text(encoding="utf-8"), "A to find its run refused")
    said = answered(tmp_path / "data")
    assert said.get("alice") == 2, said
    assert said.get("pm", 0) == 1 and said.get("engineer", 0) == 1, said
    events = history(tmp_path / "data")
    assert len({e.id for e in events}) == len(events), "nothing twice"
    epochs = [e.epoch for e in events]
    assert epochs == sorted(epochs), "every accepted line is of a current lease"
    assert JsonlLog(tmp_path / "data" / "sessions" / "room:r1.jsonl").stale == []


def test_a_killed_replicas_queued_message_is_answered_by_another(
    replicas: list[ServeProcess], pg_url: str, tmp_path: Path
) -> None:
    a, b = (server.start() for server in replicas)
    open_room(b)
    post(a, "@pm are you there", "m1", wait=False)
    a_pid = str(a.proc.pid if a.proc else "")
    wait_until(lambda: (lease_owner(pg_url, "room:r1") or "").split(":")[1:2] == [a_pid], "A runs")
    killed = time.monotonic()
    a.kill()
    # B notices A is gone (its replica lease expires), adopts m1, takes the room and runs it
    # from the checkpoint A left; the same message posted to B again returns that answer.
    replay = post(b, "@pm are you there", "m1", wait=True)
    took = time.monotonic() - killed
    assert replay["duplicate"] and replay["status"] == "done", replay
    said = answered(tmp_path / "data")
    assert said == {"alice": 1, "pm": 1}, said
    print(f"failover: {took:.1f} s from kill -9 to the answer (lease {LEASE} s)")

    a.start()  # back, as a new owner: it takes rooms only through their leases
    second = post(a, "@pm and now", "m2", wait=True)
    assert second["status"] == "done" and answered(tmp_path / "data")["pm"] == 2


def test_a_stream_on_one_replica_shows_a_room_run_on_the_other(
    replicas: list[ServeProcess], tmp_path: Path
) -> None:
    a, b = (server.start() for server in replicas)
    open_room(a)
    done = post(a, "@pm hello", "m1", wait=True)
    ids = [e["id"] for e in done["events"]]
    seen: list[str] = []
    with httpx.Client(base_url=b.url, timeout=30) as client:
        with client.stream("GET", "/api/sessions/room:r1/events") as stream:
            for line in stream.iter_lines():
                if line.startswith("id:"):
                    seen.append(line.split(":", 1)[1].strip())
                if seen and seen[-1] == ids[-1]:
                    break
        assert seen[-len(ids) :] == ids, "B streams what A ran, in order"
        # Resumed on A after an id B sent: the rest, nothing twice.
        headers = {"Last-Event-ID": seen[-2]}
        with (
            httpx.Client(base_url=a.url, timeout=30) as other,
            other.stream("GET", "/api/sessions/room:r1/events", headers=headers) as rest,
        ):
            for line in rest.iter_lines():
                if line.startswith("data:"):
                    assert json.loads(line[5:])["id"] == seen[-1]
                    break
