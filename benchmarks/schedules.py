"""Issue 24: schedules fire each due time exactly once under concurrency and kill -9.

    .venv/bin/python benchmarks/schedules.py                  # both legs, 1,000 due times each
    .venv/bin/python benchmarks/schedules.py --leg sqlite --schedules 2 --fires 6

Two legs, each on a fresh project (the repository's employees, the offline simulator: a
deterministic test double) and ``--schedules`` interval schedules (``every: --every``, a DM
turn each, in a DM of its own; the last ``--quiet`` of them ``quiet: true``, whose message
lists nothing to check, so the employee's answer is "nothing to report"), ``overlap: queue``,
``retries: 1``, ``missed: {policy: once, grace: --grace}``:

- ``sqlite``: two ``staffroom schedules run`` processes on one data folder (the ledger is
  ``schedules.sqlite`` there, no database);
- ``postgres``: ``--replicas`` ``staffroom serve`` processes (each runs the scheduler) on one
  data folder and one PostgreSQL database (a throwaway cluster, or ``--database``; rooms'
  lease ``--room-lease`` s); every ``--kill-every`` s a random one is kill -9'd and started
  again at once.

Both tick every ``--tick`` s (``$STAFFROOM_SCHEDULER_TICK``). Once every process beats, the
schedules are written with ``start_at`` a few seconds ahead: the window is the ``--fires``
due times from there (``--fires / --schedules`` each). After the window the processes run
until every due time of it is settled in the ledger (or ``--drain-timeout``); then the
schedules are removed from the file and the processes stopped.

Judged by the DMs' session logs, not by the ledger's claims: each fire posts one person's
message whose ``meta.schedule.fire`` is its fire id. Per due time of the window:

- ran: exactly one message posted for it; doubled: more than one (or an event id twice in
  a log); lost: none, and the ledger does not report it missed, skipped or failed;
- missed: none posted, reported ``missed`` / ``skipped`` in the ledger (allowed, counted);
  failed: none posted, ledger ``failed``; contradicted: a message posted while the ledger
  says missed/skipped, or the ledger says ``done``/``quiet`` with nothing posted (in lost);
- replies: each turn gives one employee message; matched to the fires' messages oldest first
  (a run cut short by a kill or a lost room lease is finished when the next message comes:
  counted as answered late, not a fault). double-answered: an employee message with no
  message left to answer (a fire run twice); unanswered: a fire's message never answered;
  quiet-delivered: an employee message in a quiet DM not flagged ``meta.nothing_to_report``
  (a quiet fire with nothing to say must deliver nothing).

Also printed: the ledger's view (states, quiet fires), late starts (message time minus due
time, from the logs: min / median / p99 / max) and takeovers (a fire claimed again after its
owner's claim ran out: attempts above 1). A verdict line per leg, ``ok: ...`` or ``FAIL: ...``
(exit 1 when any leg fails).
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
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from framework.data_folder import DataFolder  # noqa: E402
from framework.database.local_cluster import LocalCluster  # noqa: E402
from framework.database.pool import Database  # noqa: E402
from framework.schedules.fire_store import Fire, open_fire_store  # noqa: E402
from framework.schedules.timing import fire_id  # noqa: E402
from framework.sessions.events import Event, EventKind  # noqa: E402
from framework.sessions.jsonl_log import JsonlLog  # noqa: E402
from framework.sessions.keys import SessionKey  # noqa: E402

EMPLOYEES = ("pm", "engineer", "designer")
VERDICT = (
    "doubled",
    "lost",
    "failed",
    "contradicted",
    "double-answered",
    "unanswered",
    "quiet-delivered",
    "stray",
)


@dataclass
class Proc:
    """A scheduler process (``schedules run`` or ``serve``), started again after a kill."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    ready: str
    """What its first line of output says once it runs."""
    proc: subprocess.Popen[str] | None = None
    up: bool = False
    pids: list[int] = field(default_factory=list)
    """Every process it has been (one more per restart)."""

    def start(self) -> None:
        with self.log.open("a", encoding="utf-8") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=log, text=True, env=self.env
            )
        first = self.proc.stdout.readline() if self.proc.stdout else ""
        if self.ready not in first:
            self.proc.wait()
            sys.exit(f"{self.name} did not start: {first}\n{self.log.read_text()[-3000:]}")
        self.pids.append(self.proc.pid)
        self.up = True

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def kill(self) -> None:
        self.up = False
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass(frozen=True)
class Plan:
    """The schedules and the window of due times judged."""

    names: list[str]
    quiet: set[str]
    dms: dict[str, tuple[str, str]]  # schedule -> (user, employee)
    start: datetime
    every: timedelta
    per_schedule: int

    def dues(self) -> list[datetime]:
        return [self.start + k * self.every for k in range(self.per_schedule)]

    @property
    def end(self) -> datetime:
        return self.start + (self.per_schedule - 1) * self.every


def make_plan(args: argparse.Namespace, start: datetime) -> Plan:
    names = [f"s{i:02d}" for i in range(args.schedules)]
    quiet = set(names[len(names) - args.quiet :]) if args.quiet else set()
    dms = {n: (f"u{i:02d}", EMPLOYEES[i % len(EMPLOYEES)]) for i, n in enumerate(names)}
    every = timedelta(seconds=args.every)
    return Plan(names, quiet, dms, start, every, max(1, args.fires // args.schedules))


def schedules_yaml(plan: Plan, grace: int) -> str:
    lines = ["schedules:"]
    for name in plan.names:
        user, employee = plan.dms[name]
        ask = "Anything that needs someone?" if name in plan.quiet else f"Status of {name}?"
        lines += [
            f"  {name}:",
            f"    every: {int(plan.every.total_seconds())}s",
            f'    start_at: "{plan.start:%Y-%m-%dT%H:%M:%SZ}"',
            "    overlap: queue",
            "    retries: 1",
            f"    missed: {{policy: once, grace: {grace}s}}",
            f"    quiet: {'true' if name in plan.quiet else 'false'}",
            f'    start: {{dm: {{employee: {employee}, user: {user}, message: "{ask}"}}}}',
        ]
    return "\n".join(lines) + "\n"


@dataclass
class Leg:
    """One leg's processes and what its driver did."""

    name: str
    data: Path
    project: Path
    procs: list[Proc]
    db_url: str | None = None
    kills: int = 0
    notes: list[str] = field(default_factory=list)


async def ledger(leg: Leg) -> tuple[list[Fire], set[int]]:
    """Every fire in the ledger, and the pids of the schedulers that beat in the last 3 s."""
    db = await Database.open(leg.db_url, max_size=2) if leg.db_url else None
    try:
        store = await open_fire_store(leg.data, db)
        try:
            fires = await store.history(limit=10**7)
            now = datetime.now(UTC)
            beats = {b.pid for b in await store.heartbeats() if now - b.last < timedelta(seconds=3)}
        finally:
            await store.close()
    finally:
        if db is not None:
            await db.close()
    return fires, beats


async def wait_for_beats(leg: Leg, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if {p.pid for p in leg.procs} <= (await ledger(leg))[1]:
            return
        await asyncio.sleep(0.2)
    sys.exit(f"{leg.name}: the schedulers never all beat")


async def drive_kills(leg: Leg, every: float, until: float) -> None:
    """kill -9 a random process every ``every`` s (on the clock) until ``until``; each is
    started again at once."""
    n = 0
    began = time.monotonic()
    restarts: list[asyncio.Task[None]] = []
    while every > 0 and began + (n + 1) * every <= until:
        n += 1
        await asyncio.sleep(max(0.0, began + n * every - time.monotonic()))
        live = [p for p in leg.procs if p.up]
        if not live:
            continue
        victim = random.choice(live)
        pid = victim.pid
        victim.kill()
        leg.kills += 1
        print(f"  {time.monotonic() - began:5.1f} s kill -9 {victim.name} (pid {pid})", flush=True)
        restarts.append(asyncio.create_task(asyncio.to_thread(victim.start)))
    await asyncio.gather(*restarts)


async def settle(leg: Leg, plan: Plan, timeout: float) -> int:
    """Wait until no due time of the window is unsettled in the ledger (no row, or running);
    how many still are at the timeout."""
    wanted = {fire_id(n, d) for n in plan.names for d in plan.dues()}
    deadline = time.monotonic() + timeout
    while True:
        fires, _ = await ledger(leg)
        done = {f.fire_id for f in fires if f.state != "running"}
        left = len(wanted - done)
        if not left or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.5)


def read_dm(data: Path, user: str, employee: str) -> list[Event]:
    path = DataFolder(data).session_log(SessionKey.parse(f"dm:{user}@{employee}"))
    return JsonlLog(path).read_all() if path.exists() else []


def after_window(fid: str, name: str, plan: Plan) -> bool:
    """Whether ``fid`` is a fire of ``name`` due after the window (those are not judged)."""
    schedule, _, when = fid.partition("@")
    try:
        due = datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return False
    return schedule == name and due > plan.end


def owner_pid(owner: str | None) -> int | None:
    """The pid in a scheduler's owner name (``host:pid:object``)."""
    parts = (owner or "").split(":")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def scan_dm(
    name: str, events: list[Event], plan: Plan, counts: Counter[str], examples: list[str]
) -> tuple[Counter[str], set[str], list[float]]:
    """One schedule's DM: how often each fire id was posted, the fire ids answered, and the
    late starts (message time minus due time) of the window's fires."""
    grid = {fire_id(name, d): d for d in plan.dues()}
    for eid, n in Counter(e.id for e in events).items():
        if n > 1:
            counts["doubled"] += 1
            examples.append(f"{name}: event {eid} x{n}")
    posted: Counter[str] = Counter()
    waiting: list[str] = []  # fires' messages not answered yet, oldest first
    answered: set[str] = set()
    late: list[float] = []
    for event in (e for e in events if e.kind == EventKind.MESSAGE):
        if event.from_person:
            fid = str((event.meta.get("schedule") or {}).get("fire", ""))
            posted[fid] += 1
            waiting.append(fid)
            if fid in grid:
                ts = datetime.fromisoformat(event.ts.replace("Z", "+00:00"))
                late.append((ts - grid[fid]).total_seconds())
            elif not after_window(fid, name, plan):
                counts["stray"] += 1  # not this schedule's fire, or off its grid
                examples.append(f"{name}: a message with fire id {fid!r}")
            continue
        if name in plan.quiet and not event.meta.get("nothing_to_report"):
            counts["quiet-delivered"] += 1
            examples.append(f"{name}: {event.id} said {str(event.content)[:60]!r}")
        if not waiting:  # one turn gives one reply: this one answers nothing
            counts["double-answered"] += 1
            examples.append(f"{name}: reply {event.id} answers no message")
            continue
        if len(waiting) > 1:  # a run a kill or a lost lease cut short, finished later
            counts["answered-late"] += 1
        answered.add(waiting.pop(0))
    return posted, answered, late


def judge(leg: Leg, plan: Plan, fires: list[Fire]) -> tuple[Counter[str], list[str]]:
    """The counts (see the module docstring) and lines to print."""
    counts: Counter[str] = Counter()
    examples: list[str] = []
    by_id = {f.fire_id: f for f in fires}
    grid = {fire_id(n, d) for n in plan.names for d in plan.dues()}
    late: list[float] = []
    for name in plan.names:
        user, employee = plan.dms[name]
        events = read_dm(leg.data, user, employee)
        posted, answered, delays = scan_dm(name, events, plan, counts, examples)
        late += delays
        for due in plan.dues():
            fid = fire_id(name, due)
            n, row = posted.get(fid, 0), by_id.get(fid)
            state = row.state if row is not None else "no row"
            if n > 1:
                counts["doubled"] += 1
                examples.append(f"{fid}: posted {n} times")
            elif n == 1:
                counts["ran"] += 1
                if state in ("missed", "skipped"):
                    counts["contradicted"] += 1
                    examples.append(f"{fid}: posted, but the ledger says {state}")
                if fid not in answered:
                    counts["unanswered"] += 1
                    examples.append(f"{fid}: posted, no reply")
            elif state in ("missed", "skipped"):
                counts["missed"] += 1
            elif state == "failed":
                counts["failed"] += 1
                examples.append(f"{fid}: failed: {row.detail[:100] if row else ''}")
            else:
                counts["lost"] += 1
                if state in ("done", "quiet"):
                    counts["contradicted"] += 1
                examples.append(f"{fid}: nothing posted, ledger: {state}")
    window = [by_id[f] for f in grid if f in by_id]
    states = Counter(f.state for f in window)
    takeovers = [f for f in window if f.attempts > 1]
    names = {pid: p.name for p in leg.procs for pid in p.pids}
    won = Counter(names.get(owner_pid(f.owner), "?") for f in window if f.owner)
    quiet_rows = sum(1 for f in window if f.schedule in plan.quiet and f.state == "quiet")
    quiet_due = len(plan.quiet) * plan.per_schedule
    started = [(f.started - f.due).total_seconds() for f in window if f.started is not None]
    lines = [
        f"due times {len(grid)} ({len(plan.names)} schedules x {plan.per_schedule}, every "
        f"{plan.every.total_seconds():g} s; {len(plan.quiet)} quiet)",
        f"logs: ran {counts['ran']}, reported missed {counts['missed']}, failed "
        f"{counts['failed']}, lost {counts['lost']}, doubled {counts['doubled']}",
        "ledger: "
        + ", ".join(f"{s} {n}" for s, n in sorted(states.items()))
        + f"; no row {len(grid) - len(window)}; quiet fires {quiet_rows} of {quiet_due}",
        f"takeovers: {len(takeovers)} fires claimed again "
        f"({sum(f.attempts - 1 for f in takeovers)} takeovers)",
        f"replies: one per fire's message, in order (answered after a later fire's message: "
        f"{counts['answered-late']}, a run cut short and finished by the next one)",
        "fires run by: " + ", ".join(f"{n} {c}" for n, c in sorted(won.items())),
    ]
    for what, values in (("late start s (logs)", late), ("late start s (ledger)", started)):
        if values:
            lines.append(
                f"{what}: min {min(values):.2f} median {statistics.median(values):.2f} "
                f"p99 {percentile(values, 0.99):.2f} max {max(values):.2f}"
            )
    return counts, lines + [f"  {e}" for e in examples[:20]]


def base_env(args: argparse.Namespace) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    # This checkout's framework, not whichever one is installed.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["STAFFROOM_SCHEDULER_TICK"] = f"{args.tick:g}"
    # Every employee on the simulator, a test double taking --delay s a call: fires are under
    # way when a process is killed.
    env["STAFFROOM_MODEL"] = f"{{provider: simulated, options: {{delay: {args.delay:g}}}}}"
    return env


def sqlite_leg(args: argparse.Namespace, work: Path) -> Leg:
    data, project = work / "data", work / "project"
    argv = [sys.executable, "-m", "framework", "schedules", "--data-dir", str(data)]
    argv += ["--project", str(project), "run"]
    procs = [
        Proc(f"scheduler-{c}", argv, base_env(args), work / f"{c}.log", "running") for c in "ab"
    ]
    return Leg("sqlite", data, project, procs)


def postgres_leg(args: argparse.Namespace, work: Path, db_url: str) -> Leg:
    data, project = work / "data", work / "project"
    config = work / "server.yaml"
    config.write_text(
        f"database:\n  url_env: STAFFROOM_DATABASE_URL\n  lease_seconds: {args.room_lease:g}\n"
    )
    env = base_env(args) | {"STAFFROOM_DATABASE_URL": db_url}
    argv = [sys.executable, "-m", "framework", "serve", "--no-auth", "--port", "0"]
    argv += ["--config", str(config), "--data-dir", str(data), "--project", str(project)]
    argv += ["--log-level", "warning"]
    procs = [
        Proc(f"replica-{chr(ord('a') + i)}", argv, env, work / f"serve-{i}.log", "serving on")
        for i in range(args.replicas)
    ]
    return Leg("postgres", data, project, procs, db_url)


async def run_leg(leg: Leg, args: argparse.Namespace) -> bool:
    """Start the processes, write the schedules, kill (postgres), settle, stop, judge."""
    shutil.copytree(ROOT / "agents", leg.project / "agents")
    (leg.project / "scenarios").mkdir()
    try:
        for proc in leg.procs:  # one at a time: the first applies the migrations
            await asyncio.to_thread(proc.start)
        await wait_for_beats(leg)
        # Ahead by a few ticks: every scheduler sees the file (and the cursors exist) first.
        ahead = max(3.0, 6 * args.tick)
        start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=ahead + 1)
        plan = make_plan(args, start)
        written = leg.project / "schedules.yaml.new"
        written.write_text(schedules_yaml(plan, args.grace), encoding="utf-8")
        written.replace(leg.project / "schedules.yaml")
        kills = "" if leg.name == "sqlite" else f", kill -9 every {args.kill_every:g} s"
        print(
            f"[{leg.name}] {len(leg.procs)} schedulers, tick {args.tick:g} s{kills}, window "
            f"{plan.start:%H:%M:%S}-{plan.end:%H:%M:%S}Z",
            flush=True,
        )
        window_end = time.monotonic() + (plan.end - datetime.now(UTC)).total_seconds()
        if leg.name == "postgres":
            await drive_kills(leg, args.kill_every, window_end)
        await asyncio.sleep(max(0.0, window_end - time.monotonic()))
        began = time.monotonic()
        unsettled = await settle(leg, plan, args.drain_timeout)
        print(f"  settled {time.monotonic() - began:.1f} s after the window", flush=True)
        # No more fires (those after the window are not judged): the processes stop sooner.
        written.write_text("schedules: {}\n", encoding="utf-8")
        written.replace(leg.project / "schedules.yaml")
        await asyncio.sleep(max(1.0, 3 * args.tick))
    finally:
        for proc in leg.procs:
            await asyncio.to_thread(proc.stop)
    fires, _ = await ledger(leg)
    counts, lines = judge(leg, plan, fires)
    counts["unsettled"] = unsettled
    for line in lines:
        print(line)
    if leg.kills:
        print(f"kills: {leg.kills}")
    names = (*VERDICT, "unsettled")
    bad = any(counts[n] for n in names) or counts["ran"] + counts["missed"] != len(
        plan.dues()
    ) * len(plan.names)
    figures = " ".join(f"{n} {counts[n]}" for n in names)
    print(f"{'FAIL' if bad else 'ok'} [{leg.name}]: {figures} missed {counts['missed']}")
    return not bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leg", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--quiet", type=int, default=6, help="how many of them are quiet")
    parser.add_argument("--every", type=int, default=2, help="seconds between due times")
    parser.add_argument("--fires", type=int, default=1000, help="due times per leg")
    parser.add_argument("--tick", type=float, default=0.5)
    parser.add_argument("--delay", type=float, default=0.2, help="simulated model s a call")
    parser.add_argument("--grace", type=int, default=30, help="seconds (missed.grace)")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--kill-every", type=float, default=10)
    parser.add_argument("--room-lease", type=float, default=5, help="the rooms' lease, s")
    parser.add_argument("--drain-timeout", type=float, default=120)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--database", default=None, help="an empty database's URL (default: a throwaway cluster)"
    )
    args = parser.parse_args()
    if not 0 <= args.quiet <= args.schedules:
        parser.error("--quiet is at most --schedules")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # through the finally blocks
    random.seed(args.seed)
    ok = True
    if args.leg in ("sqlite", "both"):
        work = Path(tempfile.mkdtemp(prefix="bench-schedules-"))
        passed = asyncio.run(run_leg(sqlite_leg(args, work), args))
        ok &= passed
        if passed:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"logs kept in {work}")
    if args.leg in ("postgres", "both"):
        ok &= postgres(args)
    return 0 if ok else 1


def postgres(args: argparse.Namespace) -> bool:
    work = Path(tempfile.mkdtemp(prefix="bench-schedules-pg-"))
    cluster = None
    if args.database:
        url = args.database
    else:
        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-schedules-db-"))).start()
        url = cluster.create_database("bench")
    try:
        passed = asyncio.run(run_leg(postgres_leg(args, work, url), args))
    finally:
        if cluster is not None:
            cluster.stop()
    if passed:
        shutil.rmtree(work, ignore_errors=True)
        if cluster is not None:
            shutil.rmtree(cluster.folder, ignore_errors=True)
    else:
        print(f"logs kept in {work}" + (f", database in {cluster.folder}" if cluster else ""))
    return passed


if __name__ == "__main__":
    sys.exit(main())
