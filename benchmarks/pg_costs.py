"""Issue 23: what one answered message costs on PostgreSQL, in-process (no HTTP, no load client).

    .venv/bin/python benchmarks/pg_costs.py                       # 10 rooms x 3 messages, 8 batches
    .venv/bin/python benchmarks/pg_costs.py --rooms 20 --messages 5 --batches 4

A throwaway PostgreSQL cluster (framework.database.local_cluster) is started on loopback with
``pg_stat_statements`` loaded, and the gateway (``Gateway``, what ``staffroom serve`` runs)
is opened in this process on it, over the project of ``benchmarks/server_load.py`` (free
chat, three employees, the offline simulator: a test double sleeping ``--delay`` s per call).
Each room's first message (its entry) is run before the clock starts. Then ``--batches``
batches: every room posts ``--messages`` messages in turn (``wait``), all rooms at once, each
mentioning one employee (one turn). Per answered message, each batch:

- statements: PostgreSQL's own count (``pg_stat_statements``, every database of the cluster,
  the benchmark's own reads excluded);
- round trips: psycopg's waits for the server (``AsyncConnection.wait``) that sent or read
  anything, counted here (and all its waits, as the first profile of issue 23 counted them:
  a ``commit()`` with no transaction open is a wait on nothing);
- replica CPU: this process's CPU time (user + system) over the batch;
- PostgreSQL CPU: the postmaster's process tree (``/proc``), over the batch.

Statements and round trips do not depend on the machine's load; the CPU figures do (best and
median of the batches are printed). Exit 1 if a message is not answered once.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import AsyncConnection

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from replica_throughput import tree_cpu  # noqa: E402
from server_load import EMPLOYEES, write_project  # noqa: E402

from framework import EventKind, Settings, Staffroom  # noqa: E402
from framework.database.local_cluster import LocalCluster  # noqa: E402
from framework.serving.gateway import Gateway  # noqa: E402

SCENARIO = "bench-enqueue"
_OWN = "%pg_stat_statements%"  # the benchmark's own statements


class RoundTrips:
    """Counts psycopg's waits on the server in this process (``AsyncConnection.wait``): all of
    them (``waits``, as issue 23's first profile counted) and those that sent or read
    anything (``count``: round trips; a ``commit()`` with no transaction open waits on
    nothing)."""

    def __init__(self) -> None:
        self.count = 0
        self.waits = 0
        self._wait: Callable[..., Awaitable[Any]] = AsyncConnection.wait

    def __enter__(self) -> RoundTrips:
        original, counter = self._wait, self

        def watched(gen: Generator[Any, Any, Any]) -> Generator[Any, Any, Any]:
            try:
                value = next(gen)
            except StopIteration as done:  # nothing to send: no round trip
                return done.value
            counter.count += 1
            while True:
                sent = yield value
                try:
                    value = gen.send(sent)
                except StopIteration as done:
                    return done.value

        async def counted(conn: AsyncConnection[Any], gen: Any, *args: Any, **kw: Any) -> Any:
            counter.waits += 1
            return await original(conn, watched(gen), *args, **kw)

        AsyncConnection.wait = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        AsyncConnection.wait = self._wait  # type: ignore[method-assign]


@dataclass
class Batch:
    """One batch's figures, per answered message."""

    messages: int
    statements: float
    round_trips: float
    waits: float
    replica_ms: float
    postgres_ms: float


def _statements(admin: str) -> int:
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query NOT LIKE %s",
            (_OWN,),
        ).fetchone()
    return int(row[0]) if row else 0


def _show_statements(admin: str, messages: int) -> None:
    """Print each statement's calls per message, most first."""
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT calls, query FROM pg_stat_statements WHERE query NOT LIKE %s "
            "ORDER BY calls DESC",
            (_OWN,),
        ).fetchall()
    for calls, query in rows:
        print(f"  {calls / messages:6.2f}  {' '.join(str(query).split())[:150]}")


def _reset(admin: str) -> None:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def start_cluster(folder: Path) -> LocalCluster:
    """The cluster, with ``pg_stat_statements`` loaded (the server restarted once for it)."""
    cluster = LocalCluster(folder).start()
    conf = cluster.data / "postgresql.conf"
    with conf.open("a", encoding="utf-8") as out:
        out.write("\nshared_preload_libraries = 'pg_stat_statements'\n")
    cluster.restart()
    return cluster


async def _room_messages(gateway: Gateway, key: str, room: int, batch: int, count: int) -> int:
    """Post ``count`` messages to ``key`` in turn; how many got exactly one reply."""
    answered = 0
    for n in range(count):
        who = EMPLOYEES[(room + n) % len(EMPLOYEES)]
        text = f"@{who} question {batch}.{n} of room {room}"
        result = await gateway.post(key, text, author="alice", wait=True)
        replies = [
            e
            for e in result.events
            if e.kind == EventKind.MESSAGE and not e.from_person and e.author == who
        ]
        answered += len(replies) == 1
    return answered


async def run(args: argparse.Namespace, cluster: LocalCluster, work: Path) -> list[Batch]:
    url = admin = cluster.url("costs")
    # The server's pid: the first line of its postmaster.pid.
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    project = work / "project"
    write_project(project, args.delay)
    settings = Settings(
        data_dir=work / "data", project_dir=project, allow_network=False, database=url
    )
    batches: list[Batch] = []
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        try:
            keys = []
            for room in range(args.rooms):  # entry and a first message, not measured
                opened = await gateway.open_room(f"r{room:03d}", SCENARIO, start=False)
                keys.append(opened.key)
            await asyncio.gather(
                *(_room_messages(gateway, k, i, -1, 1) for i, k in enumerate(keys))
            )
            for batch in range(args.batches):
                _reset(admin)
                pg0, cpu0 = tree_cpu(postmaster), time.process_time()
                with RoundTrips() as trips:
                    done = await asyncio.gather(
                        *(
                            _room_messages(gateway, k, i, batch, args.messages)
                            for i, k in enumerate(keys)
                        )
                    )
                cpu, pg = time.process_time() - cpu0, tree_cpu(postmaster) - pg0
                answered = sum(done)
                if answered != args.rooms * args.messages:
                    sys.exit(f"batch {batch}: {answered} of {args.rooms * args.messages} answered")
                statements = _statements(admin)
                if args.show and batch == args.batches - 1:
                    _show_statements(admin, answered)
                batches.append(
                    Batch(
                        answered,
                        statements / answered,
                        trips.count / answered,
                        trips.waits / answered,
                        1000 * cpu / answered,
                        1000 * pg / answered,
                    )
                )
                b = batches[-1]
                print(
                    f"batch {batch}: {answered} messages, {b.statements:.1f} statements, "
                    f"{b.round_trips:.1f} round trips ({b.waits:.1f} waits), "
                    f"replica {b.replica_ms:.1f} ms, PostgreSQL {b.postgres_ms:.1f} ms per message",
                    flush=True,
                )
        finally:
            await gateway.close()
    return batches


def summary(batches: list[Batch]) -> str:
    """Per answered message: the mean counts, and best / median CPU of the batches."""

    def best_median(values: list[float]) -> str:
        return f"{min(values):.1f} / {statistics.median(values):.1f}"

    total = sum(b.messages for b in batches)
    statements = sum(b.statements * b.messages for b in batches) / total
    trips = sum(b.round_trips * b.messages for b in batches) / total
    waits = sum(b.waits * b.messages for b in batches) / total
    return (
        f"per message: {statements:.1f} statements, {trips:.1f} round trips ({waits:.1f} "
        "psycopg waits); CPU ms best / "
        f"median: replica {best_median([b.replica_ms for b in batches])}, "
        f"PostgreSQL {best_median([b.postgres_ms for b in batches])}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=10)
    parser.add_argument("--messages", type=int, default=3, help="per room and batch")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.05, help="the simulator's s per call")
    parser.add_argument("--show", action="store_true", help="list the last batch's statements")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="staffroom-pgcosts-"))
    # Its own folder: LocalCluster hands it to the `postgres` user when this runs as root.
    pg_folder = Path(tempfile.mkdtemp(prefix="staffroom-pgcosts-pg-"))
    try:
        cluster = start_cluster(pg_folder)
        try:
            url = cluster.create_database("costs")
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION pg_stat_statements")
            batches = asyncio.run(run(args, cluster, folder))
        finally:
            cluster.stop("fast")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(pg_folder, ignore_errors=True)
    print(summary(batches))


if __name__ == "__main__":
    main()
