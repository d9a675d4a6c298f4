"""Issue 23: three `staffroom serve` replicas on one data folder and one PostgreSQL database,
one of them kill -9'd every few seconds while posts and Slack-style redeliveries go on.

    .venv/bin/python benchmarks/replicas.py      # 3 replicas, 100 rooms, kill every 10 s for 120 s
    .venv/bin/python benchmarks/replicas.py --rooms 4 --duration 12 --kill-every 5 --rate 2

A throwaway PostgreSQL cluster on loopback (framework.database.local_cluster) and a project with
the repository's employees and one free-chat scenario (``double_texting: enqueue``, the offline
simulator, a test double sleeping ``--delay`` s per call) are written to a temp folder. Then:

- ``--rooms`` rooms are opened (PUT /api/rooms/{id}) on random replicas;
- for ``--duration`` s, ``--rate`` posts a second go to random rooms on random replicas (each a
  unique ``message_id``, ``wait: false``, mentioning one employee: one reply per message); a
  post to a dead replica is redelivered to another; ``--redeliver`` of them are posted again,
  same id, to another random replica, as Slack does when it does not hear back in time;
- every ``--kill-every`` s a random replica is kill -9'd and started again at once. Its failover
  time: from the kill until every message it had queued and not answered (ledger rows it owned
  in state queued/running at the kill) is answered (no longer queued/running) by another;
- ``--sse-rooms`` rooms each have an SSE client that reconnects with ``Last-Event-ID`` to a
  random live replica when its stream breaks (its replica was killed) and every ``--sse-switch``
  s anyway;
- ``--restart-db-at`` s (may be given more than once; the throwaway cluster only): PostgreSQL is
  stopped (``pg_ctl stop -m fast``: every connection dropped), left down ``--db-down`` s, and
  started again on the same port, under load. A replica answers 503 with ``Retry-After`` while
  it cannot reach the database; the load client waits that long and posts again, as a real
  client does. Its recovery time: from the stop until every message queued or running at the
  stop is answered. ``--kill-every 0``: no kills (a restart alone).

At the end (all replicas up) the ledger is drained (no queued/running row) and every room's
history is read with ``JsonlLog.read_all`` (which drops lines of a fenced, stale lease):

- lost: a message_id a replica accepted (200/202) with no person's message event in its room
  (matched by ``meta.client_id``, or the id itself);
- doubled: an event id twice in a room, a message_id stored as two message events, or a
  person's message followed (before the next person's message) by more than one employee
  message (each message mentions one employee, so one run gives one reply);
- unanswered: a person's message followed by no employee message before the next one;
- forked: LangGraph's ``checkpoints`` rows sharing (thread_id, checkpoint_ns,
  parent_checkpoint_id): two runs wrote from the same parent. A thread with more than one row
  is shown too (``multi-row threads``): the runtime prunes a room to its latest checkpoint
  only every 20 steps, so most rooms end with more than one row (not a fork by itself);
- sse-gaps / sse-dups / sse-stray: per streamed room, history ids its client never received, ids
  it received twice, ids received that are not in the history (a fenced line streamed).

Prints the figures and a verdict line ``ok: lost 0 doubled 0 ...`` or ``FAIL: ...`` (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from framework.database.local_cluster import LocalCluster  # noqa: E402
from framework.sessions.events import EventKind  # noqa: E402
from framework.sessions.jsonl_log import JsonlLog  # noqa: E402

SCENARIO = """\
id: bench
title: Replicas
participants: [pm, engineer, designer]
humans: [alice, bob]
announcement:
  text: Free chat with three employees.
settings:
  double_texting: enqueue
  model: {{provider: simulated, options: {{delay: {delay}}}}}
"""
EMPLOYEES = ["pm", "engineer", "designer"]
PENDING = ("queued", "running")


@dataclass
class Replica:
    """One ``staffroom serve`` process; restarted on the same port after a kill."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    port: int = 0
    proc: subprocess.Popen[str] | None = None
    up: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        argv = [*self.argv, "--port", str(self.port)]
        with self.log.open("a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=log, text=True, env=self.env
            )
        first = self.proc.stdout.readline() if self.proc.stdout else ""
        if "serving on http://" not in first:
            self.proc.wait()
            sys.exit(f"replica {self.name} did not start:\n{self.log.read_text()}")
        self.port = int(first.split("serving on ", 1)[1].split()[0].rsplit(":", 1)[1])
        for _ in range(1200):  # a readiness wait: no figure depends on it
            try:
                if httpx.get(f"{self.url}/api/health", timeout=5).status_code == 200:
                    self.up = True
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        sys.exit(f"replica {self.name} never answered on {self.url}")

    def kill(self) -> None:
        self.up = False
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        self.up = False
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Run:
    """What the drivers saw: accepted posts, kills, and what each SSE client received."""

    replicas: list[Replica]
    db_url: str
    accepted: dict[str, str] = field(default_factory=dict)  # message_id -> room
    unsent: int = 0
    refusals: Counter[str] = field(default_factory=Counter)  # why a delivery was not accepted
    redelivered: int = 0
    redelivered_duplicate: int = 0
    failovers: list[float] = field(default_factory=list)
    empty_kills: int = 0
    failover_timeouts: int = 0
    retried_after: int = 0  # 503/429 answers the client waited out (Retry-After) and resent
    db_restarts: list[str] = field(default_factory=list)  # one line per restart
    db_recoveries: list[float] = field(default_factory=list)
    db_recovery_timeouts: int = 0
    sse_ids: dict[str, list[str]] = field(default_factory=dict)
    sse_reconnects: int = 0
    stopping: bool = False

    def live(self, other_than: Replica | None = None) -> list[Replica]:
        return [r for r in self.replicas if r.up and r is not other_than] or self.replicas


def message_text(mid: str) -> str:
    """The text of message ``mid`` (the same on every delivery): one employee mentioned."""
    return f"@{EMPLOYEES[int(mid[1:]) % len(EMPLOYEES)]} question {mid}"


async def post(run: Run, client: httpx.AsyncClient, room: str, mid: str, first: Replica) -> None:
    """Deliver ``mid`` until some replica accepts it (a dead one's post goes to another; a
    minute at most)."""
    text = message_text(mid)
    body: dict[str, Any] = {"text": text, "author": "alice", "message_id": mid, "wait": False}
    target = first
    deadline = time.monotonic() + 60  # a platform retries for a while, then gives up
    while time.monotonic() < deadline:
        try:
            answer = await client.post(
                f"{target.url}/api/sessions/room:{room}/messages", json=body, timeout=30
            )
            if answer.status_code in (200, 202):
                run.accepted[mid] = room
                return
            run.refusals[f"{answer.status_code} {answer.text[:80]}"] += 1
            if answer.status_code in (429, 503):  # as a client does: wait, send it again there
                run.retried_after += 1
                await asyncio.sleep(retry_after(answer))
                continue
        except httpx.TransportError as exc:
            run.refusals[type(exc).__name__] += 1
        await asyncio.sleep(0.2)
        target = random.choice(run.live(target))
    run.unsent += 1


def retry_after(answer: httpx.Response) -> float:
    """The seconds a 503/429 answer asks to wait (its ``Retry-After``; 1 when it has none)."""
    try:
        return max(0.0, float(answer.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


async def redeliver(run: Run, client: httpx.AsyncClient, room: str, mid: str) -> None:
    """The same message again to a random replica, as a platform does after a timeout."""
    await asyncio.sleep(random.uniform(0.0, 2.0))
    body = {"text": message_text(mid), "author": "alice", "message_id": mid, "wait": False}
    target = random.choice(run.live())
    try:
        answer = await client.post(
            f"{target.url}/api/sessions/room:{room}/messages", json=body, timeout=30
        )
    except httpx.TransportError:
        return
    run.redelivered += 1
    if answer.status_code in (200, 202) and answer.json().get("duplicate"):
        run.redelivered_duplicate += 1


async def drive_posts(run: Run, args: argparse.Namespace, rooms: list[str]) -> None:
    tasks: set[asyncio.Task[None]] = set()
    async with httpx.AsyncClient() as client:
        end = time.monotonic() + args.duration
        n = 0
        while time.monotonic() < end:
            n += 1
            room, mid = random.choice(rooms), f"m{n:05d}"
            tasks.add(asyncio.create_task(post(run, client, room, mid, random.choice(run.live()))))
            if random.random() < args.redeliver:
                tasks.add(asyncio.create_task(redeliver(run, client, room, mid)))
            await asyncio.sleep(1.0 / args.rate)
        await asyncio.gather(*tasks)


async def pending_rows(db_url: str, owner_pid: int | None = None) -> set[tuple[str, str]]:
    """(session, message_id) of the ledger rows queued or running (of one replica's pid, or of
    all); asked again until the database answers (it may be restarting)."""
    sql = "SELECT session, message_id FROM staffroom_ingest WHERE state IN ('queued', 'running')"
    params: tuple[str, ...] = ()
    if owner_pid is not None:
        sql, params = sql + " AND owner LIKE %s", (f"%:{owner_pid}:%",)
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(
                db_url, autocommit=True, connect_timeout=5
            ) as conn:
                cur = await conn.execute(sql, params)
                return {(str(a), str(b)) for a, b in await cur.fetchall()}
        except psycopg.OperationalError:
            await asyncio.sleep(0.2)


async def until_answered(
    rows: set[tuple[str, str]], db_url: str, since: float, limit: float
) -> float | None:
    """Seconds from ``since`` until none of ``rows`` is queued or running (None: not within
    ``limit`` s)."""
    while time.monotonic() < since + limit:
        if not rows & await pending_rows(db_url):
            return time.monotonic() - since
        await asyncio.sleep(0.2)
    return None


async def measure_failover(
    run: Run, rows: set[tuple[str, str]], killed: float, limit: float
) -> None:
    if not rows:
        run.empty_kills += 1
        return
    took = await until_answered(rows, run.db_url, killed, limit)
    if took is None:
        run.failover_timeouts += 1
    else:
        run.failovers.append(took)


async def drive_kills(run: Run, args: argparse.Namespace) -> list[asyncio.Task[None]]:
    """A kill -9 every ``--kill-every`` s on the clock (a restart does not push the next one
    back); the victim is started again in the background at once."""
    tasks: list[asyncio.Task[None]] = []
    start = time.monotonic()
    n = 0
    while args.kill_every > 0 and (n + 1) * args.kill_every <= args.duration:
        n += 1
        await asyncio.sleep(max(0.0, start + n * args.kill_every - time.monotonic()))
        victim = random.choice([r for r in run.replicas if r.up] or run.replicas)
        if victim.proc is None or not victim.up:
            continue
        pid = victim.proc.pid
        victim.kill()
        killed = time.monotonic()
        rows = await pending_rows(run.db_url, pid)
        tasks.append(asyncio.create_task(measure_failover(run, rows, killed, args.drain_timeout)))
        tasks.append(asyncio.create_task(asyncio.to_thread(victim.start)))
        print(
            f"  {killed - start:5.1f} s kill -9 {victim.name} (pid {pid}): "
            f"{len(rows)} queued/running",
            flush=True,
        )
    return tasks


async def drive_db_restarts(run: Run, args: argparse.Namespace, cluster: LocalCluster) -> None:
    """Stop PostgreSQL (fast: every connection dropped) at each ``--restart-db-at`` second,
    start it again ``--db-down`` s later on the same port, and time each recovery."""
    start = time.monotonic()
    for at in sorted(args.restart_db_at):
        await asyncio.sleep(max(0.0, start + at - time.monotonic()))
        rows = await pending_rows(run.db_url)
        stopped = time.monotonic()
        await asyncio.to_thread(cluster.stop, "fast")
        await asyncio.sleep(args.db_down)
        await asyncio.to_thread(cluster.start)
        down = time.monotonic() - stopped
        took = await until_answered(rows, run.db_url, stopped, args.drain_timeout)
        if took is None:
            run.db_recovery_timeouts += 1
        else:
            run.db_recoveries.append(took)
        answered = (
            "not all answered" if took is None else f"all answered {took:.1f} s after the stop"
        )
        line = (
            f"PostgreSQL restart at {stopped - start:.1f} s: down {down:.1f} s, "
            f"{len(rows)} queued/running at the stop, {answered}"
        )
        run.db_restarts.append(line)
        print(f"  {line}", flush=True)


async def listen(run: Run, room: str, switch: float) -> None:
    """One SSE client on ``room``: resumes with Last-Event-ID on a random live replica."""
    seen = run.sse_ids.setdefault(room, [])
    async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=60)) as client:
        while not run.stopping:
            target = random.choice(run.live())
            headers = {"Last-Event-ID": seen[-1]} if seen else {}
            try:
                async with asyncio.timeout(switch):
                    async with client.stream(
                        "GET", f"{target.url}/api/sessions/room:{room}/events", headers=headers
                    ) as stream:
                        async for line in stream.aiter_lines():
                            if line.startswith("id:"):
                                seen.append(line.split(":", 1)[1].strip())
            except (TimeoutError, httpx.HTTPError):
                pass
            run.sse_reconnects += 1
            await asyncio.sleep(0.05)


def ledger_queued(db_url: str) -> set[str]:
    """The message ids still queued or running (not run, though accepted durably)."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT message_id FROM staffroom_ingest WHERE state IN ('queued', 'running')"
        ).fetchall()
    return {str(row[0]) for row in rows}


def ledger_pending(db_url: str) -> int:
    with psycopg.connect(db_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM staffroom_ingest WHERE state IN ('queued', 'running')"
        ).fetchone()
    return int(row[0]) if row else 0


def checkpoint_figures(db_url: str) -> tuple[int, int]:
    """(forked parents, threads with more than one checkpoint row)."""
    with psycopg.connect(db_url) as conn:
        forked = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM checkpoints WHERE parent_checkpoint_id IS NOT NULL"
            " GROUP BY thread_id, checkpoint_ns, parent_checkpoint_id HAVING count(*) > 1) f"
        ).fetchone()
        multi = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM checkpoints"
            " GROUP BY thread_id, checkpoint_ns HAVING count(*) > 1) m"
        ).fetchone()
    return (int(forked[0]) if forked else 0, int(multi[0]) if multi else 0)


def check_rooms(
    data: Path,
    rooms: list[str],
    accepted: dict[str, str],
    queued: frozenset[str] | set[str] = frozenset(),
) -> dict[str, Any]:
    """Counts of lost, doubled and unanswered messages, with examples (room, ids); a message
    still ``queued`` in the ledger is not lost (it is counted as undrained)."""
    counts: Counter[str] = Counter()
    examples: list[str] = []
    histories: dict[str, list[str]] = {}
    for room in rooms:
        events = JsonlLog(data / "sessions" / f"room:{room}.jsonl").read_all()
        histories[room] = [e.id for e in events]
        for eid, n in Counter(histories[room]).items():
            if n > 1:
                counts["doubled"] += 1
                examples.append(f"room {room}: event {eid} x{n}")
        stored: Counter[str] = Counter()
        waiting: dict[str, list[tuple[str, int]]] = {name: [] for name in EMPLOYEES}
        said = 0  # persons' messages so far
        for event in (e for e in events if e.kind == EventKind.MESSAGE):
            if event.author not in EMPLOYEES:
                mid = str(event.meta.get("client_id") or event.id)
                stored[mid] += 1
                said += 1
                mentioned = str(event.content).split()[0].lstrip("@")
                if mentioned in waiting:
                    waiting[mentioned].append((mid, said))
            elif waiting[event.author]:  # the reply to the oldest message mentioning them
                mid, at = waiting[event.author].pop(0)
                if at < said:
                    counts["answered-late"] += 1
                    examples.append(
                        f"room {room}: {mid} answered by {event.id} after a later message"
                    )
            else:
                counts["doubled"] += 1
                examples.append(f"room {room}: reply {event.id} by {event.author} answers nothing")
        for mid, _ in (item for queue in waiting.values() for item in queue):
            counts["unanswered"] += 1
            examples.append(f"room {room}: message {mid} has no reply")
        for mid, n in stored.items():
            if n > 1:
                counts["doubled"] += 1
                examples.append(f"room {room}: message_id {mid} stored {n} times")
        for mid in (m for m, r in accepted.items() if r == room and m not in stored):
            if mid in queued:
                examples.append(f"room {room}: message_id {mid} accepted, still queued")
                continue
            counts["lost"] += 1
            examples.append(f"room {room}: message_id {mid} accepted, not in the log")
    return {"counts": counts, "examples": examples, "histories": histories}


def sse_figures(run: Run, histories: dict[str, list[str]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for room, seen in run.sse_ids.items():
        history = histories[room]
        got = Counter(seen)
        counts["sse-gaps"] += sum(1 for eid in history if eid not in got)
        counts["sse-dups"] += sum(n - 1 for n in got.values() if n > 1)
        counts["sse-stray"] += sum(1 for eid in got if eid not in set(history))
    return counts


async def main_async(
    args: argparse.Namespace, work: Path, db_url: str, cluster: LocalCluster | None
) -> int:
    project = work / "project"
    shutil.copytree(ROOT / "agents", project / "agents")
    (project / "scenarios").mkdir()
    (project / "scenarios" / "bench.yaml").write_text(SCENARIO.format(delay=args.delay))
    config = work / "server.yaml"
    database = f"  url_env: STAFFROOM_DATABASE_URL\n  lease_seconds: {args.lease}\n"
    database += f"  pool_size: {args.pool_size}\n" if args.pool_size else ""
    config.write_text(f"database:\n{database}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    env["STAFFROOM_DATABASE_URL"] = db_url
    # This checkout's framework, not whichever one is installed (a worktree's run measured main).
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "framework", "serve", "--no-auth", "--config", str(config)]
    argv += ["--data-dir", str(work / "data"), "--project", str(project), "--log-level", "warning"]
    names = [chr(ord("a") + i) for i in range(args.replicas)]
    replicas = [Replica(name, argv, env, work / f"serve-{name}.log") for name in names]
    try:
        for replica in replicas:  # one at a time: the first applies the migrations
            await asyncio.to_thread(replica.start)
        return await exercise(Run(replicas, db_url), args, work, cluster)
    finally:
        for replica in replicas:
            replica.stop()


async def exercise(
    run: Run, args: argparse.Namespace, work: Path, cluster: LocalCluster | None
) -> int:
    """Open the rooms, post, kill, drain, check; the verdict's exit code."""
    replicas, db_url = run.replicas, run.db_url
    rooms = [f"r{i:03d}" for i in range(args.rooms)]
    async with httpx.AsyncClient(timeout=60) as client:
        for room in rooms:
            target = random.choice(replicas)
            answer = await client.put(f"{target.url}/api/rooms/{room}", json={"scenario": "bench"})
            if answer.status_code != 200:
                sys.exit(f"opening room {room} failed: {answer.status_code} {answer.text}")
    kills = f"kill -9 every {args.kill_every:g} s" if args.kill_every > 0 else "no kills"
    restarts = " ".join(f"{at:g}" for at in sorted(args.restart_db_at))
    print(
        f"{len(replicas)} replicas, {len(rooms)} rooms, {args.duration:g} s, {kills}, lease "
        f"{args.lease:g} s, model delay {args.delay:g} s"
        + (f", PostgreSQL restarted at {restarts} s (down {args.db_down:g} s)" if restarts else ""),
        flush=True,
    )
    listeners = [
        asyncio.create_task(listen(run, r, args.sse_switch)) for r in rooms[: args.sse_rooms]
    ]
    started = time.monotonic()
    killing = asyncio.create_task(drive_kills(run, args))
    restarting = None
    if cluster is not None and args.restart_db_at:
        restarting = asyncio.create_task(drive_db_restarts(run, args, cluster))
    await drive_posts(run, args, rooms)
    measures = await killing
    if restarting is not None:
        await restarting
    deadline = time.monotonic() + args.drain_timeout
    while (left := ledger_pending(db_url)) and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
    drained = time.monotonic() - started
    await asyncio.gather(*measures)
    checked = check_rooms(work / "data", rooms, run.accepted, ledger_queued(db_url))
    histories = checked["histories"]
    end = time.monotonic() + 30  # let the SSE clients catch up with the end of their rooms
    while time.monotonic() < end and any(
        histories[room] and histories[room][-1] not in seen for room, seen in run.sse_ids.items()
    ):
        await asyncio.sleep(0.2)
    run.stopping = True
    for task in listeners:
        task.cancel()
    await asyncio.gather(*listeners, return_exceptions=True)
    forked, multi = checkpoint_figures(db_url)
    counts: Counter[str] = checked["counts"]
    counts["forked"] = forked
    counts |= sse_figures(run, histories)
    counts["undrained"] = left

    samples = sorted(run.failovers)
    print(
        f"posts accepted {len(run.accepted)}, never accepted {run.unsent}, redelivered "
        f"{run.redelivered} ({run.redelivered_duplicate} answered as duplicates), "
        f"resent after Retry-After {run.retried_after}, drained after {drained:.0f} s"
    )
    for line in run.db_restarts:
        print(line)
    if samples:
        listed = " ".join(f"{s:.1f}" for s in samples)
        print(f"failover s ({len(samples)} kills): {listed}")
        print(
            f"failover s: min {samples[0]:.1f} median {statistics.median(samples):.1f} "
            f"max {samples[-1]:.1f}"
        )
    print(
        f"kills with nothing queued: {run.empty_kills}, "
        f"failovers not done in {args.drain_timeout:g} s: {run.failover_timeouts}"
    )
    print(f"checkpoints: forked parents {forked}, multi-row threads {multi}")
    print(
        f"sse: {len(run.sse_ids)} rooms, {sum(map(len, run.sse_ids.values()))} ids received, "
        f"{run.sse_reconnects} reconnects"
    )
    print(
        f"answered after a later message: {counts['answered-late']} (a killed run's message,"
        " answered once its adopter ran it: order, not loss)"
    )
    for why, n in run.refusals.most_common(5):
        print(f"  delivery refused x{n}: {why}")
    for example in checked["examples"][:20]:
        print(f"  {example}")
    names = [
        "lost",
        "doubled",
        "forked",
        "unanswered",
        "sse-gaps",
        "sse-dups",
        "sse-stray",
        "undrained",
    ]
    figures = " ".join(f"{name} {counts[name]}" for name in names)
    timeouts = run.failover_timeouts + run.db_recovery_timeouts
    bad = any(counts[name] for name in names) or timeouts or run.unsent
    figures += f" never-accepted {run.unsent} failover-timeouts {run.failover_timeouts}"
    if args.restart_db_at:
        figures += f" db-recovery-timeouts {run.db_recovery_timeouts}"
    print(f"{'FAIL' if bad else 'ok'}: {figures}")
    if bad:
        print(f"logs kept in {work}")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--duration", type=float, default=120, help="seconds of posts and kills")
    parser.add_argument("--kill-every", type=float, default=10)
    parser.add_argument("--rate", type=float, default=4, help="posts a second")
    parser.add_argument("--redeliver", type=float, default=0.2, help="share posted twice")
    parser.add_argument("--delay", type=float, default=0.5, help="simulated model seconds")
    parser.add_argument("--lease", type=float, default=3)
    parser.add_argument("--pool-size", type=int, default=0, help="0: the server's default")
    parser.add_argument("--sse-rooms", type=int, default=3)
    parser.add_argument("--sse-switch", type=float, default=5)
    parser.add_argument("--drain-timeout", type=float, default=180)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--restart-db-at",
        type=float,
        action="append",
        default=[],
        metavar="SECONDS",
        help="restart PostgreSQL this many seconds into the load (again for more restarts)",
    )
    parser.add_argument(
        "--db-down", type=float, default=0.0, help="seconds PostgreSQL stays down per restart"
    )
    parser.add_argument(
        "--database", default=None, help="an empty database's URL (default: a throwaway cluster)"
    )
    args = parser.parse_args()
    if args.restart_db_at and args.database:
        parser.error("--restart-db-at restarts the throwaway cluster: leave out --database")
    # timeout(1) and Ctrl-C end the run through the finally blocks: no replica or cluster left
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    random.seed(args.seed)
    work = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    if args.database:
        code = asyncio.run(main_async(args, work, args.database, None))
    else:
        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-replicas-pg-"))).start()
        try:
            code = asyncio.run(main_async(args, work, cluster.create_database("bench"), cluster))
        finally:
            cluster.stop()
        if code == 0:
            shutil.rmtree(cluster.folder, ignore_errors=True)
        else:  # its ledger and checkpoints explain the failure: start it again to read them
            print(f"database kept in {cluster.folder} (LocalCluster(folder).start())")
    if code == 0:
        shutil.rmtree(work, ignore_errors=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
