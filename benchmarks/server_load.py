"""Issue 12: many rooms at once through the HTTP server; a burst under each double-texting policy.

    .venv/bin/python benchmarks/server_load.py --runs 3   # 100 rooms x 10 messages, 0.5 s model
    .venv/bin/python benchmarks/server_load.py --rooms 3 --messages 2 --delay 0.01 --burst 4

Each run writes a project (the repository's agents; a free-chat scenario per policy whose
model is the offline simulator, a test double sleeping ``--delay`` s per call), starts
``staffroom serve`` on a free 127.0.0.1 port with a token, and drives it with one
httpx.AsyncClient, at most ``--concurrency`` requests in flight:

- load: each room gets ``--messages`` posts in turn (each waits for its answer), all rooms at
  once; a post mentions one employee: one turn. The framework's share of a post is its wall
  latency minus the model's time, judged from the answer, not a clock: employee turns x
  ``--delay``, each turn checked to be one model call (no tool events, ``meta.usage.calls`` 1).
- burst: ``--burst`` messages from one person into one room, ``--burst-gap`` s apart, each
  mentioning all three employees, once per policy (enqueue, reject, interrupt, coalesce).

Then every room's history is read back over HTTP: each message sent must be stored once
(a coalesced one inside the message it joined, a rejected one not at all), each run's
messages together in the order its answer gave, every event in its own room. Exit 1 if not.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

Json = dict[str, Any]

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ["enqueue", "reject", "interrupt", "coalesce"]
EMPLOYEES = ["pm", "engineer", "designer"]
SCENARIO = """\
id: bench-{policy}
title: Server load ({policy})
participants: [pm, engineer, designer]
humans: [alice, bob]
announcement:
  text: Free chat with three employees.
settings:
  double_texting: {policy}
  model: {{provider: simulated, options: {{delay: {delay}}}}}
"""
SERVER_YAML = """\
tokens:
  - {{name: bench, secret: {token}, operations: [read, open, post], rate_limit: 0}}
wait_limit: 900  # a post waits for its answer however slow the server gets
limits: {{max_requests: 1000, max_requests_per_token: 1000}}  # the client's --concurrency bounds
"""
OTHER = ["done", "rejected", "interrupted", "coalesced"]  # what each policy adds to "done"
ALLOWED = {policy: {"done", other} for policy, other in zip(POLICIES, OTHER, strict=True)}
CHECKS = {  # what each check counts; every count must end at zero
    "lost": "a message sent and accepted that is not in its room's log",
    "doubled": "stored twice, coalesced twice, or stored though rejected",
    "unanswered": "a run done with no employee reply right after its message",
    "interleaved": "a run's messages apart in the log, or an event of another room",
    "stray": "a message in the log that no answer of ours returned",
    "policy": "an answer the room's policy never gives (e.g. rejected under enqueue)",
    "calls": "an employee turn that was not one model call (tool events, usage.calls != 1)",
}


def write_project(folder: Path, delay: float) -> None:
    """A project with the repository's employees and one scenario per policy."""
    shutil.copytree(ROOT / "agents", folder / "agents")
    (folder / "scenarios").mkdir()
    for policy in POLICIES:
        text = SCENARIO.format(policy=policy, delay=delay)
        (folder / "scenarios" / f"bench_{policy}.yaml").write_text(text, encoding="utf-8")


@dataclass
class Server:
    """``staffroom serve --port 0`` in a subprocess, stopped with Ctrl-C as a person does."""

    proc: subprocess.Popen[str]
    url: str

    @classmethod
    def start(cls, work: Path, token: str, extra: tuple[str, ...] = ()) -> Server:
        """Serve ``work/project`` on ``work/data``; ``extra``: more ``serve`` options (e.g.
        ``--database``, ``--workers``)."""
        config = work / "server.yaml"
        config.write_text(SERVER_YAML.format(token=token), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
        # This checkout's framework, not whichever one the interpreter has installed.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        argv = [sys.executable, "-m", "framework", "serve", "--port", "0", "--config", str(config)]
        argv += ["--data-dir", str(work / "data"), "--project", str(work / "project")]
        argv += ["--log-level", "warning", *extra]  # warning: no access-log line per request
        with (work / "serve.log").open("w", encoding="utf-8") as log:
            proc = subprocess.Popen(
                argv, cwd=work, stdout=subprocess.PIPE, stderr=log, text=True, env=env
            )
        first = proc.stdout.readline() if proc.stdout else ""  # printed once the port is bound
        if "serving on http://" not in first:
            proc.wait()
            sys.exit(f"staffroom serve did not start:\n{(work / 'serve.log').read_text()}")
        server = cls(proc, first.split("serving on ", 1)[1].split()[0])
        for _ in range(600):  # until it answers (a readiness wait: no figure depends on it)
            try:
                if httpx.get(f"{server.url}/api/health", timeout=5).status_code == 200:
                    return server
            except httpx.TransportError:
                time.sleep(0.1)
        sys.exit(f"staffroom serve never answered on {server.url}")

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far (Linux /proc; 0 elsewhere)."""
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text(encoding="utf-8")
        except OSError:
            return 0.0
        after = stat.rsplit(")", 1)[1].split()
        return (int(after[11]) + int(after[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)  # it finishes queued work, then exits
        try:
            return self.proc.wait(timeout=300)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


class Api:
    """The few endpoints the benchmark calls, behind one concurrency bound."""

    def __init__(self, url: str, token: str, concurrency: int, pool: int) -> None:
        self.http = httpx.AsyncClient(
            base_url=url,
            headers={"Authorization": f"Bearer {token}"},
            # An idle connection is dropped here before the server's keep-alive (5 s) closes
            # it: else a post sent just as the server closes fails "disconnected".
            limits=httpx.Limits(
                max_connections=pool, max_keepalive_connections=pool, keepalive_expiry=2.0
            ),
            timeout=httpx.Timeout(900.0),
        )
        self.bound = asyncio.Semaphore(concurrency)

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        async with self.bound:
            return await self.http.request(method, path, **kwargs)

    async def open_room(self, room: str, policy: str) -> str:
        answer = await self.call("PUT", f"/api/rooms/{room}", json={"scenario": f"bench-{policy}"})
        answer.raise_for_status()
        return str(answer.json()["session"])

    async def wait_idle(self, key: str) -> None:
        """Until the room's entry (or anything queued) has run."""
        while True:
            answer = await self.call("GET", f"/api/sessions/{quote(key, safe='')}/status")
            if answer.status_code in (429, 503):  # busy (a pool with no connection free): again
                await asyncio.sleep(0.2)
                continue
            answer.raise_for_status()
            state = answer.json()
            if not state["busy"] and state["queued"] == 0:
                return
            await asyncio.sleep(0.05)

    async def post(self, key: str, text: str, message_id: str) -> tuple[float, Json]:
        """Post as alice: (wall seconds, the answer's body), timed inside the bound."""
        body = {"text": text, "author": "alice", "message_id": message_id}
        path = f"/api/sessions/{quote(key, safe='')}/messages"
        async with self.bound:
            started = time.perf_counter()
            answer = await self.http.post(path, json=body)
            wall = time.perf_counter() - started
        if answer.status_code not in (200, 409):
            sys.exit(f"POST {path} answered {answer.status_code}: {answer.text[:500]}")
        return wall, answer.json()

    async def history(self, key: str) -> list[Json]:
        """Every event of the session, page by page."""
        events: list[Json] = []
        params: Json = {"limit": 1000}
        while True:
            path = f"/api/sessions/{quote(key, safe='')}/history"
            page = (await self.call("GET", path, params=params)).json()
            events += page["events"]
            if not page["more"]:
                return events
            params["after"] = page["next_after"]


def said(events: list[Json]) -> list[Json]:
    return [e for e in events if e["kind"] == "message"]


def replies(events: list[Json]) -> list[Json]:
    return [e for e in said(events) if not e.get("meta", {}).get("human")]


def model_calls_off(events: list[Json]) -> int:
    """Turns in ``events`` that were not one model call each (see the module docstring)."""
    odd = [e for e in replies(events) if e.get("meta", {}).get("usage", {}).get("calls") != 1]
    return len(odd) + sum(e["kind"] in ("tool_call", "tool_result") for e in events)


def known_id(event: Json) -> str:
    """A message's id as its poster knows it: a client's id is stored in ``meta.client_id``
    (the event's own id is ``client-<hash>`` of it, in its own namespace)."""
    return str(event.get("meta", {}).get("client_id") or event["id"])


def check_room(key: str, policy: str, log: list[Json], sent: Json) -> Counter[str]:
    """Judge a room's log against the answers its posts got (``sent``: id -> answer body)."""
    found: Counter[str] = Counter(interleaved=sum(e["session"] != key for e in log))
    messages = said(log)
    ids = [known_id(e) for e in messages]
    stored = Counter(ids)
    merged = Counter(m for e in messages for m in e.get("meta", {}).get("merges", []))
    claimed: set[str] = set()
    for mid, answer in sent.items():
        status = answer["status"]
        found["policy"] += status not in ALLOWED[policy]
        times = stored[mid] + merged[mid]
        if status == "rejected":
            found["doubled"] += times
            continue
        found["lost"] += times == 0
        found["doubled"] += max(times - 1, 0)
        if status not in ("done", "interrupted") or stored[mid] != 1:
            continue
        block = [known_id(e) for e in said(answer["events"])]
        start = ids.index(mid)
        found["interleaved"] += ids[start : start + len(block)] != block
        claimed.update(block)
        found["calls"] += model_calls_off(answer["events"])
        after = messages[start + 1] if start + 1 < len(messages) else {"meta": {"human": True}}
        found["unanswered"] += status == "done" and bool(after.get("meta", {}).get("human"))
    found["stray"] = sum(i not in claimed for i in ids)
    return found


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


@dataclass
class Load:
    rooms: int
    messages: int
    seconds: float
    answered: int
    walls: list[float]
    framework: list[float]  # wall - employee turns x delay, per post
    cpu: tuple[float, ...]  # CPU seconds of the server, of this script (and what else is metered)
    checks: Counter[str]

    def row(self, run: int, delay: float, concurrency: int) -> list[str]:
        ceiling = min(self.rooms, concurrency) / delay if delay else float("inf")
        ms = [1000 * percentile(v, q) for v in (self.walls, self.framework) for q in (50, 99)]
        cpu = [f"{1000 * c / max(self.answered, 1):.1f}" for c in self.cpu]
        held = f"{self.answered / self.seconds:.1f}"
        size, took = f"{self.rooms} x {self.messages}", f"{self.seconds:.1f}"
        return [str(run), size, took, held, f"{ceiling:.0f}", *[f"{v:.0f}" for v in ms], *cpu]


async def drive_room(api: Api, key: str, room: int, messages: int) -> list[Any]:
    """Post ``messages`` questions, each once the previous one was answered."""
    ids = [f"load-{room}-{n}" for n in range(messages)]
    texts = [f"@{EMPLOYEES[(room + n) % 3]} question {n} on plan {room}" for n in range(messages)]
    return [(mid, *await api.post(key, text, mid)) for mid, text in zip(ids, texts, strict=True)]


async def load_phase(
    api: Api, meter: Callable[[], tuple[float, ...]], args: argparse.Namespace
) -> Load:
    """Open ``args.rooms`` rooms, then drive them all at once; ``meter``: CPU seconds so far
    of what is measured (the server, this script, ...), read before and after the drive."""
    keys = await asyncio.gather(*(api.open_room(f"load-{i}", "enqueue") for i in range(args.rooms)))
    await asyncio.gather(*(api.wait_idle(key) for key in keys))
    before = meter()
    started = time.perf_counter()
    per_room = await asyncio.gather(
        *(drive_room(api, key, i, args.messages) for i, key in enumerate(keys))
    )
    seconds = time.perf_counter() - started
    cpu = tuple(after - first for after, first in zip(meter(), before, strict=True))
    walls, framework, checks, answered = [], [], Counter[str](), 0
    for key, posts in zip(keys, per_room, strict=True):
        for _, wall, answer in posts:
            turns = len(replies(answer["events"]))
            answered += answer["status"] == "done" and turns > 0
            walls.append(wall)
            framework.append(wall - turns * args.delay)
        sent = {mid: answer for mid, _, answer in posts}
        checks += check_room(key, "enqueue", await api.history(key), sent)
    return Load(args.rooms, args.messages, seconds, answered, walls, framework, cpu, checks)


@dataclass
class Burst:
    policy: str
    statuses: Counter[str]
    replies: int
    seconds: float
    checks: Counter[str]

    def row(self, run: int) -> list[str]:
        counts = [str(self.statuses[s]) for s in ("done", "interrupted", "coalesced", "rejected")]
        total, replied, took = self.statuses.total(), self.replies, f"{self.seconds:.1f}"
        return [str(run), self.policy, str(total), *counts, str(replied), took]


async def burst_phase(api: Api, policy: str, size: int, gap: float) -> Burst:
    key = await api.open_room(f"burst-{policy}", policy)
    await api.wait_idle(key)
    text = " ".join(f"@{e}" for e in EMPLOYEES)

    async def send(n: int) -> tuple[str, Json]:
        await asyncio.sleep(n * gap)
        _, answer = await api.post(key, f"{text} burst message {n}", f"burst-{policy}-{n}")
        return f"burst-{policy}-{n}", answer

    started = time.perf_counter()
    sent = dict(await asyncio.gather(*(send(n) for n in range(size))))
    seconds = time.perf_counter() - started
    await api.wait_idle(key)
    log = await api.history(key)
    statuses = Counter(answer["status"] for answer in sent.values())
    return Burst(policy, statuses, len(replies(log)), seconds, check_room(key, policy, log, sent))


async def one_run(args: argparse.Namespace, work: Path) -> tuple[Load, list[Burst]]:
    write_project(work / "project", args.delay)
    token = secrets.token_hex(24)
    server = Server.start(work, token)
    pool = max(args.concurrency, args.burst)
    api = Api(server.url, token, args.concurrency, pool)
    try:
        load = await load_phase(api, lambda: (server.cpu_seconds(), time.process_time()), args)
        api.bound = asyncio.Semaphore(pool)  # a burst is all at once, whatever the bound
        policies = POLICIES if args.burst else []  # --burst 0: the load phase only
        bursts = [await burst_phase(api, p, args.burst, args.burst_gap) for p in policies]
    finally:
        await api.http.aclose()
        code = server.stop()
    if code != 0:
        sys.exit(f"staffroom serve exited {code}:\n{(work / 'serve.log').read_text()}")
    return load, bursts


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)))


def span(values: list[float], digits: int = 0) -> str:
    low, high = min(values), max(values)
    return f"{low:.{digits}f}" if low == high else f"{low:.{digits}f}-{high:.{digits}f}"


def report(args: argparse.Namespace, loads: list[Load], bursts: list[list[Burst]]) -> bool:
    """Print the tables; True when every check held."""
    size = f"{args.rooms} rooms x {args.messages} messages, model delay {args.delay} s"
    print(f"\nload: {size}, concurrency {args.concurrency}; ms per post, CPU ms per message")
    header = ["run", "rooms x msgs", "seconds", "held/s", "ceiling/s", "wall p50", "wall p99"]
    header += ["framework p50", "framework p99", "server cpu", "client cpu"]
    table(header, [load.row(i + 1, args.delay, args.concurrency) for i, load in enumerate(loads)])
    if len(loads) > 1:
        held = [load.answered / load.seconds for load in loads]
        p50, p99 = ([1000 * percentile(load.framework, q) for load in loads] for q in (50, 99))
        print(f"range: held/s {span(held, 1)}, framework p50 {span(p50)} ms, p99 {span(p99)} ms")
    rows = [b.row(i + 1) for i, r in enumerate(bursts) for b in r]
    header = ["run", "policy", "sent", "done", "interrupted", "coalesced", "rejected 409"]
    if rows:
        print(f"\nburst: {args.burst} messages from alice into one room, {args.burst_gap} s apart")
        table([*header, "replies", "seconds"], rows)
    checks: Counter[str] = Counter()
    for found in [load.checks for load in loads] + [b.checks for r in bursts for b in r]:
        checks.update(found)
    print("\nchecks: " + ", ".join(f"{name} {checks[name]}" for name in CHECKS))
    return not any(checks.values())


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """The load's options, shared with replica_throughput.py (which drives this load)."""
    parser.add_argument("--rooms", type=int, default=100, help="rooms driven at once")
    parser.add_argument("--messages", type=int, default=10, help="posts per room, in turn")
    parser.add_argument("--delay", type=float, default=0.5, help="simulator seconds per call")
    parser.add_argument("--concurrency", type=int, default=100, help="requests in flight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_load_arguments(parser)
    parser.add_argument("--runs", type=int, default=1, help="runs, each with a fresh server")
    parser.add_argument("--burst", type=int, default=20, help="messages per burst (0: none)")
    parser.add_argument("--burst-gap", type=float, default=0.1, help="seconds between them")
    args = parser.parse_args()
    if min(args.rooms, args.messages, args.concurrency, args.runs) < 1:
        parser.error("--rooms, --messages, --concurrency and --runs must be >= 1")
    if min(args.delay, args.burst, args.burst_gap) < 0:
        parser.error("--delay, --burst and --burst-gap must be >= 0")
    runs = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="server-load-") as tmp:
            runs.append(asyncio.run(one_run(args, Path(tmp))))
        print(f"run {run + 1} of {args.runs} done (load average {os.getloadavg()[0]:.1f})")
    if not report(args, [load for load, _ in runs], [bursts for _, bursts in runs]):
        sys.exit(1)


if __name__ == "__main__":
    main()
