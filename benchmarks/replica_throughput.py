"""Issue 23: one `staffroom serve` replica against `--workers 2`, both on PostgreSQL, in one run.

    .venv/bin/python benchmarks/replica_throughput.py           # 100 rooms x 10 posts, 0.5 s model
    .venv/bin/python benchmarks/replica_throughput.py --runs 2  # legs A, B, then B, A
    .venv/bin/python benchmarks/replica_throughput.py --rooms 3 --messages 2 --delay 0.01

A throwaway PostgreSQL cluster is started on loopback (framework.database.local_cluster;
``--database URL`` uses a server of yours instead, on which it creates a database per leg).
Each leg gets a fresh database and a fresh data folder, and then the load of
``benchmarks/server_load.py`` (its project, load client and checks, reused from there):
``--rooms`` rooms at once, each posting ``--messages`` questions in turn (``wait: true``), one
employee turn each on the offline simulator (a test double sleeping ``--delay`` s per call).

- leg ``1 replica``: ``staffroom serve --database URL``;
- leg ``N workers``: ``staffroom serve --database URL --workers N`` (``--workers``, default 2);
  the clock starts once every worker holds its replica lease and every room's entry has run.

Per leg it prints the answered messages per second, wall and framework latency, and CPU
seconds (user + system, from /proc, each process tree whole: the replica processes with the
workers' parent; PostgreSQL's postmaster and its backends; this script, the load client), each
also per answered message; the load average before and after; then the ratio of the two legs'
messages/s. Every room's history is read back: lost, doubled, unanswered, interleaved, stray
must all be 0 (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from server_load import (  # noqa: E402  (the load client, its checks and its project)
    CHECKS,
    Api,
    Load,
    Server,
    add_load_arguments,
    load_phase,
    percentile,
    span,
    table,
    write_project,
)

from framework.database.local_cluster import LocalCluster  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()  # after the command name, which may hold blanks


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and every process under it, the reaped ones
    included (a process's ``cutime``/``cstime`` holds its waited-for children's time)."""
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            stats[int(entry.name)] = stat
            children.setdefault(int(stat[1]), []).append(int(entry.name))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if (stat := stats.get(pid)) is not None:
            total += sum(int(v) for v in stat[11:15])  # utime stime cutime cstime
            todo += children.get(pid, [])
    return total / TICK


def postmaster_of(url: str) -> int | None:
    """The pid of the PostgreSQL server behind ``url`` when it runs on this machine."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        # Read while the backend lives: once the connection closes, it exits (no parent).
        stat = _stat(int(row[0])) if row else None
    return int(stat[1]) if stat else None


def new_database(admin_url: str, name: str) -> str:
    """Create the empty database ``name`` (dropped first) on ``admin_url``'s server."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))


def wait_for_replicas(url: str, count: int, timeout: float = 300) -> None:
    """Until ``count`` replicas hold their presence lease (every worker has opened its
    gateway; a readiness wait: no figure depends on it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with psycopg.connect(url) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM staffroom_leases WHERE session LIKE 'replica:%' "
                    "AND expires_at > now()"
                ).fetchone()
            if row and row[0] >= count:
                return
        except psycopg.Error:
            pass  # the tables are made by the first replica that opens
        time.sleep(0.2)
    sys.exit(f"{count} replicas never held their leases on the database")


@dataclass
class Leg:
    """One leg's figures: the load (``cpu``: replicas, PostgreSQL, client) and the machine."""

    name: str
    run: int
    load: Load
    load_before: float
    load_after: float

    @property
    def rate(self) -> float:
        return self.load.answered / self.load.seconds

    def row(self) -> list[str]:
        load, n = self.load, max(self.load.answered, 1)
        ms = [1000 * percentile(v, q) for v in (load.walls, load.framework) for q in (50, 99)]
        cpu = [f"{c:.2f}" for c in load.cpu] + [f"{1000 * c / n:.1f}" for c in load.cpu]
        took, held = f"{load.seconds:.1f}", f"{self.rate:.1f}"
        machine = f"{self.load_before:.1f}/{self.load_after:.1f}"
        head = [str(self.run), self.name, str(load.answered), took, held]
        return head + [f"{v:.0f}" for v in ms] + cpu + [machine]


HEADER = ["run", "leg", "answered", "seconds", "msgs/s", "wall p50", "wall p99"]
HEADER += ["fw p50", "fw p99", "replicas s", "pg s", "client s"]
HEADER += ["replicas ms/msg", "pg ms/msg", "client ms/msg", "load avg"]


async def one_leg(
    args: argparse.Namespace, work: Path, url: str, workers: int, postmaster: int | None
) -> Load:
    write_project(work / "project", args.delay)
    token = secrets.token_hex(24)
    extra = ("--database", url, *(("--workers", str(workers)) if workers > 1 else ()))
    server = Server.start(work, token, extra)
    wait_for_replicas(url, workers)
    api = Api(server.url, token, args.concurrency, args.concurrency)

    def meter() -> tuple[float, ...]:
        pg = tree_cpu(postmaster) if postmaster is not None else float("nan")
        return (tree_cpu(server.proc.pid), pg, time.process_time())

    try:
        load = await load_phase(api, meter, args)
    except Exception:
        print(f"the server's log:\n{(work / 'serve.log').read_text()[-5000:]}", file=sys.stderr)
        raise
    finally:
        await api.http.aclose()
        code = server.stop()
    if code != 0:
        sys.exit(f"staffroom serve exited {code}:\n{(work / 'serve.log').read_text()}")
    return load


def run_legs(args: argparse.Namespace, admin_url: str) -> list[Leg]:
    postmaster = postmaster_of(admin_url)
    legs: list[Leg] = []
    plan = [("1 replica", 1), (f"{args.workers} workers", args.workers)]
    for run in range(1, args.runs + 1):
        # Legs alternate in order from run to run, so a drift in the machine's load does
        # not favour one of them.
        for name, workers in plan if run % 2 else plan[::-1]:
            url = new_database(admin_url, f"tput_{run}_{workers}")
            before = os.getloadavg()[0]
            with tempfile.TemporaryDirectory(prefix="replica-tput-") as tmp:
                load = asyncio.run(one_leg(args, Path(tmp), url, workers, postmaster))
            legs.append(Leg(name, run, load, before, os.getloadavg()[0]))
            print(f"run {run}, {name}: {legs[-1].rate:.1f} msgs/s", flush=True)
    return legs


def report(args: argparse.Namespace, legs: list[Leg]) -> bool:
    """Print the table, the ratios and the checks; True when every check held."""
    size = f"{args.rooms} rooms x {args.messages} messages, model delay {args.delay} s"
    print(f"\n{size}, concurrency {args.concurrency}; ms per post; CPU s, and ms per message")
    table(HEADER, [leg.row() for leg in legs])
    ratios = []
    for run in range(1, args.runs + 1):
        one, many = (next(g for g in legs if g.run == run and g.name == n) for n in names(args))
        ratios.append(many.rate / one.rate)
        print(f"run {run}: {many.name} / 1 replica = {ratios[-1]:.2f}x messages/s")
    if len(ratios) > 1:
        for name in names(args):
            rates = [g.rate for g in legs if g.name == name]
            cpu = [1000 * g.load.cpu[0] / max(g.load.answered, 1) for g in legs if g.name == name]
            print(f"range {name}: {span(rates, 1)} msgs/s, replicas {span(cpu, 1)} ms/msg")
        print(f"range ratio: {span(ratios, 2)}x")
    checks: Counter[str] = Counter()
    for leg in legs:
        checks.update(leg.load.checks)
    print("\nchecks: " + ", ".join(f"{name} {checks[name]}" for name in CHECKS))
    return not any(checks.values())


def names(args: argparse.Namespace) -> tuple[str, str]:
    return "1 replica", f"{args.workers} workers"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_load_arguments(parser)
    parser.add_argument("--workers", type=int, default=2, help="workers of the second leg")
    parser.add_argument("--runs", type=int, default=1, help="runs of both legs")
    parser.add_argument(
        "--database",
        default=None,
        help="a server's URL to create the legs' databases on (default: a throwaway cluster)",
    )
    args = parser.parse_args()
    if min(args.rooms, args.messages, args.concurrency, args.runs) < 1 or args.workers < 2:
        parser.error("--rooms, --messages, --concurrency and --runs must be >= 1, --workers >= 2")
    if args.database:
        legs = run_legs(args, args.database)
    else:
        folder = Path(tempfile.mkdtemp(prefix="replica-tput-pg-"))
        try:
            with LocalCluster(folder) as cluster:
                legs = run_legs(args, cluster.url())
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if not report(args, legs):
        sys.exit(1)


if __name__ == "__main__":
    main()
