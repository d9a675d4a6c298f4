"""The scheduler: every due time of every schedule fires once, on time, late or reported missed.

Each tick (``tick_seconds``) it re-reads the project's files when they changed
(``watched_files.py``), beats its heartbeat, and takes each schedule's due times between its
cursor and now: on time (within ``missed.grace``) they are claimed and run, older ones go by
the missed policy and every missed one is recorded. A claim is the fire's row, written before
the run under the fire's id, so no two schedulers (on one folder or one database) run a due
time, and a fire whose scheduler died is taken over when its claim expires and run again
under the same message id (answered once). Built in: reflection triggers fire at the
project's ``reflection_time``; idle sessions are closed every ``idle_every`` seconds. The
clock is given (:class:`Clock`), so a test drives a week in milliseconds.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from framework.errors import InputError
from framework.schedules.clock import Clock, SystemClock
from framework.schedules.fire_store import Fire, FireStore
from framework.schedules.reflection_fires import REFLECTION_PREFIX, due_reflections
from framework.schedules.runner import FireResult, Runner
from framework.schedules.timing import (
    classify,
    due_times,
    fire_id,
    run_now_id,
    zone_of,
)
from framework.schedules.watched_files import ProjectFiles
from framework.specs.project_file import ProjectFile
from framework.specs.schedules_file import (
    SCHEDULES_FILE,
    SchedulesFile,
    ScheduleSpec,
)

if TYPE_CHECKING:
    from framework.staffroom import Staffroom

__all__ = ["LEASE_TICKS", "Clock", "Scheduler", "SchedulerStatus", "SystemClock", "TickReport"]

log = logging.getLogger(__name__)

LEASE_TICKS = 12
"""A fire's claim lasts this many ticks without renewal (60 s at the default 5 s tick): it is
renewed every tick, so a live scheduler keeps it through eleven slow or failed ticks, and a
dead one's fires are taken over that long after its last renewal."""


@dataclass
class TickReport:
    """What one tick did (fire ids), for tests and the CLI."""

    started: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    taken_over: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SchedulerStatus:
    """What ``staffroom doctor`` and ``/api/health`` show of a scheduler."""

    owner: str
    last_tick: datetime | None
    running: list[str]
    file_error: str | None


class Scheduler:
    """Fires a project's schedules (see the module docstring)."""

    def __init__(
        self,
        staff: Staffroom,
        store: FireStore,
        runner: Runner,
        *,
        owner: str | None = None,
        clock: Clock | None = None,
        tick_seconds: float | None = None,
        lease_seconds: float | None = None,
        idle_every: float = 60.0,
        on_result: Callable[[Fire, FireResult], None] | None = None,
    ) -> None:
        """``tick_seconds``: None is ``Settings.scheduler_tick``; ``lease_seconds``: how long
        a claim lasts unrenewed (None: :data:`LEASE_TICKS` ticks, whatever the tick is set
        to later)."""
        self.staff, self.store, self.runner = staff, store, runner
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.clock: Clock = clock or SystemClock()
        self.tick_seconds = tick_seconds or staff.settings.scheduler_tick
        self._lease_seconds, self.idle_every = lease_seconds, idle_every
        self.on_result = on_result
        self._project = staff.settings.project_dir
        self._files = ProjectFiles(self._project)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._last_tick: datetime | None = None
        self._last_idle: datetime | None = None
        self._idle: asyncio.Task[None] | None = None
        self._renewing: asyncio.Task[None] | None = None

    @property
    def lease_seconds(self) -> float:
        """How long a claim of this scheduler's lasts without renewal (renewed every tick)."""
        return self._lease_seconds or LEASE_TICKS * self.tick_seconds

    # -- the file ------------------------------------------------------------------------------

    def schedules(self) -> SchedulesFile:
        """The schedules in force: the file as last read well (re-read when it changed)."""
        return self._files.schedules.get()

    def project(self) -> ProjectFile:
        """``staffroom.yaml`` as last read well (re-read when it changed)."""
        return self._files.project.get()

    def zone(self, spec: ScheduleSpec | None = None) -> ZoneInfo:
        """The zone ``spec`` runs in (None: the project's, ``staffroom.yaml``'s or UTC)."""
        project_tz = self.project().timezone
        if spec is None:
            return ZoneInfo(project_tz or "UTC")
        return zone_of(spec, self.schedules(), project_tz)

    # -- ticking -------------------------------------------------------------------------------

    async def tick(self) -> TickReport:
        """One pass: heartbeat, due fires, take-overs, reflections, idle sessions."""
        now = self.clock.now()
        report = TickReport()
        await self.store.beat(self.owner, now=now, host=socket.gethostname(), pid=os.getpid())
        await self.store.renew(list(self._tasks), self.owner, now=now, lease_s=self.lease_seconds)
        file = self.schedules()
        paused = await self.store.paused()
        for name, spec in file.schedules.items():
            await self._schedule(name, spec, now, paused, report)
        await self._take_over(file, now, report)
        await self._reflections(now, report)
        due = self._last_idle is None or (now - self._last_idle).total_seconds() >= self.idle_every
        if due and (self._idle is None or self._idle.done()):
            # Its own task: a session's end runs hooks (a model's summary) that may take long.
            self._last_idle = now
            self._idle = asyncio.create_task(self._close_idle(), name="close idle sessions")
        self._last_tick = now
        return report

    async def _close_idle(self) -> None:
        try:
            for key in await self.staff.close_idle(reflect=False):
                log.info("closed idle session %s", key)
        except Exception:  # an outage: the next period tries again
            log.exception("closing idle sessions failed")

    async def _schedule(
        self,
        name: str,
        spec: ScheduleSpec,
        now: datetime,
        paused: dict[str, datetime],
        report: TickReport,
    ) -> None:
        cursor = await self.store.cursor(name)
        if cursor is None:  # first seen: from now on (no backfill)
            await self.store.advance(name, now)
            return
        zone = self.zone(spec)
        if spec.enabled and name not in paused:
            dues = due_times(spec, zone, cursor, now)
            sorted_out = classify(dues, now, spec.missed.grace, spec.missed.policy, spec.missed.cap)
            for due in sorted_out.missed:
                fid = fire_id(name, due)
                detail = f"missed: due {due:%Y-%m-%d %H:%M}Z, seen {now:%Y-%m-%d %H:%M}Z"
                if await self.store.record_missed(fid, name, due, "missed", now=now, detail=detail):
                    report.missed.append(fid)
            run = sorted_out.run
            if spec.missed.policy == "once" and any(kind == "due" for _, kind in run):
                # Back in time for one: it stands for the missed ones (no stale catch-up first).
                for due in (d for d, kind in run if kind == "catchup"):
                    fid, detail = fire_id(name, due), f"missed: the fire due {now:%H:%M}Z ran"
                    if await self.store.record_missed(
                        fid, name, due, "missed", now=now, detail=detail
                    ):
                        report.missed.append(fid)
                run = [(d, kind) for d, kind in run if kind == "due"]
            for due, kind in run:  # several at once: a backlog, run in order, one at a time
                await self._fire(name, spec, due, kind, now, report, backlog=len(run) > 1)
        else:  # paused or disabled: due times pass unrun, each reported
            why = "paused" if name in paused else "disabled"
            for due in due_times(spec, zone, cursor, now):
                fid = fire_id(name, due)
                if await self.store.record_missed(fid, name, due, "skipped", now=now, detail=why):
                    report.skipped.append(fid)
        await self.store.advance(name, now)

    async def _fire(
        self,
        name: str,
        spec: ScheduleSpec,
        due: datetime,
        kind: str,
        now: datetime,
        report: TickReport,
        *,
        backlog: bool = False,
    ) -> Fire | None:
        fid = fire_id(name, due)
        earlier = [f for f in await self.store.running(name) if f.fire_id != fid]
        # A backlog's runs queue behind each other whatever the overlap policy.
        if earlier and spec.overlap == "skip" and not backlog and kind != "catchup":
            detail = f"skipped: {earlier[0].fire_id} was still running"
            if await self.store.record_missed(fid, name, due, "skipped", now=now, detail=detail):
                report.skipped.append(fid)
            return None
        fire = await self.store.claim(
            fid, name, due, kind, self.owner, now=now, lease_s=self.lease_seconds
        )
        if fire is not None:
            report.started.append(fid)
            self._start(name, spec, fire, queue=backlog)
        return fire

    async def _take_over(self, file: SchedulesFile, now: datetime, report: TickReport) -> None:
        """The fires whose scheduler died (their claim ran out; one query a tick): run again
        under the same ids, or, when their schedule was deleted from the file, ended as
        skipped rather than left running for good (one still running where it started
        finishes there)."""
        for stale in await self.store.running():
            if stale.fire_id in self._tasks or stale.claimed_until is None:
                continue
            spec = file.schedules.get(stale.schedule)
            if stale.claimed_until >= now or (
                spec is None and stale.schedule.startswith(REFLECTION_PREFIX)
            ):
                continue
            fire = await self.store.claim(
                stale.fire_id, stale.schedule, stale.due, stale.kind, self.owner,
                now=now, lease_s=self.lease_seconds,
            )  # fmt: skip
            if fire is None:
                continue
            if spec is not None:
                report.taken_over.append(fire.fire_id)
                self._start(stale.schedule, spec, fire)
            else:
                why = f"skipped: {stale.schedule} was deleted from {SCHEDULES_FILE} mid-run"
                await self.store.record(fire.fire_id, self.owner, "skipped", now=now, detail=why)

    def _start(self, name: str, spec: ScheduleSpec, fire: Fire, *, queue: bool = False) -> None:
        queue = queue or spec.overlap == "queue" or fire.kind == "catchup"
        run = self._run(name, spec, fire, queue)
        self._tasks[fire.fire_id] = asyncio.create_task(run, name=f"fire {fire.fire_id}")
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.create_task(self._renew(), name="renew fire claims")

    async def _renew(self) -> None:
        """Keep this scheduler's claims while its fires run, tick or no tick (a long run, a
        shutdown's drain, `run-now` from the command line): else another takes them over."""
        while self._tasks:
            await asyncio.sleep(max(0.05, min(self.lease_seconds / 3, 5.0)))
            try:
                await self.store.renew(
                    list(self._tasks), self.owner, now=self.clock.now(), lease_s=self.lease_seconds
                )
            except Exception as exc:  # an outage: the next round tries again
                log.warning("renewing fire claims failed: %s", exc)

    async def _run(self, name: str, spec: ScheduleSpec, fire: Fire, queue: bool) -> None:
        try:
            await self._attempts(name, spec, fire, queue)
        finally:  # one of this scheduler's fires (drain() waits for it) until it is recorded
            self._tasks.pop(fire.fire_id, None)

    async def _attempts(self, name: str, spec: ScheduleSpec, fire: Fire, queue: bool) -> None:
        attempt, reason = 1, ""
        try:
            zone = self.zone(spec)
            if queue:  # behind the earlier fires of the schedule still going
                while any(
                    f.due < fire.due and f.fire_id != fire.fire_id
                    for f in await self.store.running(name)
                ):
                    await self.clock.sleep(self.tick_seconds)
            result = await self.runner.run(name, spec, fire, zone)
            while result.state == "failed" and attempt <= spec.retries and result.session:
                attempt += 1
                result = await self.runner.retry(name, spec, fire, zone, result.session, attempt)
            reason = result.detail
            if result.state == "failed" and attempt > 1:
                result = FireResult(
                    result.state, f"{result.detail} (after {attempt} attempts)", result.session,
                    result.events,
                )  # fmt: skip
        except Exception as exc:  # a bug or an outage: recorded, never a dead scheduler
            log.exception("fire %s failed", fire.fire_id)
            result = FireResult("failed", f"{type(exc).__name__}: {exc}", None)
            reason = result.detail
        if result.state == "failed":  # after the last retry: the delivery target is told
            try:
                await self.runner.notify_failure(name, spec, fire, zone, reason, attempt)
            except Exception as exc:  # the platform is down too: the ledger still says it
                log.error("fire %s: failure notice not sent: %s", fire.fire_id, exc)
        await self.store.record(
            fire.fire_id, self.owner, result.state, now=self.clock.now(),
            detail=result.detail, session=result.session,
        )  # fmt: skip
        if self.on_result is not None:
            self.on_result(fire, result)

    # -- built-in: reflections -----------------------------------------------------------------

    async def _reflections(self, now: datetime, report: TickReport) -> None:
        due = await due_reflections(self.staff, self.project().reflection_time, self.zone(), now)
        for name, spec, at in due:
            await self._fire(name, spec, at, "builtin", now, report)

    # -- people --------------------------------------------------------------------------------

    async def run_now(self, schedule: str, token: str | None = None) -> Fire | None:
        """Start ``schedule`` now (paused or not), once per ``token`` (None: this minute's):
        run-now twice in a row starts one run. Returns the fire, None when it ran already."""
        spec = self.schedules().schedules.get(schedule)
        if spec is None:
            raise InputError(
                f"no schedule '{schedule}' in {SCHEDULES_FILE}",
                field="schedule",
                fix="`staffroom schedules list` shows the schedules",
            )
        now = self.clock.now()
        fid = run_now_id(schedule, token or now.strftime("%Y%m%dT%H%M"))
        fire = await self.store.claim(
            fid, schedule, now, "run_now", self.owner, now=now, lease_s=self.lease_seconds
        )
        if fire is not None:
            self._start(schedule, spec, fire)
        return fire

    async def drain(self) -> None:
        """Wait for the fires this scheduler runs (and its closing of idle sessions) to end."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)
        if self._idle is not None and not self._idle.cancelled():
            await asyncio.gather(self._idle, return_exceptions=True)

    async def run_forever(self, stop: asyncio.Event) -> None:
        """Tick every ``tick_seconds`` until ``stop`` is set; then let running fires finish."""
        stopping = asyncio.create_task(stop.wait())
        try:
            while not stop.is_set():
                # A tick stuck on an outage (a connection that does not come back) must not
                # hold up a shutdown: stopping cancels it. What it claimed and did not start
                # is taken over once its claim expires.
                ticking = asyncio.create_task(self.tick())
                await asyncio.wait({ticking, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not ticking.done():
                    ticking.cancel()
                    with suppress(asyncio.CancelledError):
                        await ticking
                    break
                if (failed := ticking.exception()) is not None:  # the next tick tries again
                    log.error("scheduler tick failed: %s", failed, exc_info=failed)
                with suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(stopping), timeout=self.tick_seconds)
        finally:
            stopping.cancel()
            if self._idle is not None:  # a session end cut short runs again when next due
                self._idle.cancel()
                with suppress(asyncio.CancelledError):
                    await self._idle
        await self.drain()

    def status(self) -> SchedulerStatus:
        """This scheduler's last tick, the fires it runs, the file's error if any."""
        error = self._files.error
        return SchedulerStatus(self.owner, self._last_tick, sorted(self._tasks), error)
