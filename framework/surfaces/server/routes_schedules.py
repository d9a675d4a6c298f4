"""``/api/schedules``: the project's schedules, their fires, and run-now / pause / resume.

Seeing them is the ``read`` operation; steering them is ``schedule``. A token's ``sessions``
patterns do not apply: a schedule is not a session (the room or DM it starts is one, and
reading that still needs a token whose patterns match it).

The routes use the scheduler the server runs (``app.state.scheduler``) when there is one.
Without one (``staffroom serve --no-schedules``: schedules run on another host with
``staffroom schedules run``), they read ``schedules.yaml`` and the fire ledger themselves, so
the list, the history, pause and resume work all the same (a pause is a row of the ledger
that every scheduler reads on its next tick). Run-now is then refused (409): the fire would
run in a server whose operator said it runs no schedules, outside the shutdown that waits
for a scheduler's fires; the fix names the command that runs it where schedules run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Body, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from framework.errors import InputError, UnknownNameError
from framework.schedules.fire_store import FireStore, open_fire_store
from framework.schedules.health import beats
from framework.schedules.in_server import RunningScheduler
from framework.schedules.overview import overview
from framework.schedules.scheduler import Scheduler
from framework.schedules.timing import run_now_id, zone_of
from framework.specs.project_file import load_project_file
from framework.specs.schedules_file import SCHEDULES_FILE, SchedulesFile, load_schedules
from framework.surfaces.server.auth import Principal, require
from framework.surfaces.server.problems import ERROR_RESPONSES, Problem, error_responses
from framework.surfaces.server.schedule_answers import (
    HistoryOut,
    RunNowOut,
    ScheduleList,
    ScheduleOut,
    SchedulerOut,
    beat_out,
    fire_out,
    schedule_out,
)
from framework.surfaces.server.state import get_state

router = APIRouter(
    prefix="/api/schedules",
    tags=["schedules"],
    responses={
        **ERROR_RESPONSES,
        **error_responses((409, "This server runs no schedules (run-now)")),
    },
)

NAME_PATTERN = r"^[\w@+\-][\w@+\-.]*$"
ScheduleName = Annotated[
    str,
    PathParam(min_length=1, max_length=128, pattern=NAME_PATTERN, description="A schedule's id"),
]
RunId = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")]
Reader = Annotated[Principal, require("read")]
Controller = Annotated[Principal, require("schedule")]
LIST_FIX = "GET /api/schedules lists the schedules of schedules.yaml"


class RunNowBody(BaseModel):
    """Names the run: the same id twice starts one run."""

    model_config = ConfigDict(extra="forbid")

    id: RunId | None = None


@dataclass
class _Ledger:
    """What a request reads schedules from: the file, the fire store, the clock."""

    file: SchedulesFile
    file_error: str | None
    store: FireStore
    project_tz: str | None
    now: Callable[[], datetime]
    running: RunningScheduler | None

    def zone(self, name: str) -> ZoneInfo:
        return zone_of(self.file.schedules[name], self.file, self.project_tz)

    def require(self, name: str) -> None:
        if name not in self.file.schedules:
            raise UnknownNameError(
                f"no schedule '{name}' in {SCHEDULES_FILE}",
                field="schedule",
                fix=LIST_FIX,
            )


@asynccontextmanager
async def _ledger(request: Request) -> AsyncIterator[_Ledger]:
    staff = get_state(request).gateway.staff
    project = staff.settings.project_dir
    tz = load_project_file(project).timezone
    running: RunningScheduler | None = getattr(request.app.state, "scheduler", None)
    if running is not None:
        scheduler = running.scheduler
        file = scheduler.schedules()  # re-read when edited; a broken edit keeps the last good
        error = scheduler.status().file_error
        yield _Ledger(file, error, scheduler.store, tz, scheduler.clock.now, running)
        return
    try:
        file, error = load_schedules(project), None
    except InputError as exc:
        file, error = SchedulesFile(), str(exc)
    # Opened per request: these routes are few and slow-paced, and nothing stays open when
    # the server stops.
    store = await open_fire_store(staff.settings.data_dir, await staff.stores.database())
    try:
        yield _Ledger(file, error, store, tz, lambda: datetime.now(UTC), None)
    finally:
        await store.close()


async def _one(ledger: _Ledger, name: str) -> ScheduleOut:
    paused = await ledger.store.paused()
    spec = ledger.file.schedules[name]
    seen = await overview(
        name, spec, ledger.zone(name), ledger.store, paused=paused, now=ledger.now()
    )
    return schedule_out(seen)


def _scrubbed(request: Request, model: BaseModel, code: int = 200, **headers: str) -> JSONResponse:
    # Fire details and the file's error are written for a terminal and may name the server's
    # files: every path is made relative before it leaves (public.py).
    content = get_state(request).scrub.value(model.model_dump(mode="json"))
    return JSONResponse(content, status_code=code, headers=headers or None)


@router.get(
    "", summary="Every schedule: next fire, last fires, missed, paused", response_model=ScheduleList
)
async def list_schedules(request: Request, _: Reader) -> JSONResponse:
    """``staffroom schedules list``: each schedule of ``schedules.yaml`` with its next fire
    (UTC and local), whether it is paused (since when) or disabled, its latest fires with
    their outcome and how many it missed; the file's load error when the last edit is broken;
    and the schedulers' heartbeats."""
    async with _ledger(request) as ledger:
        paused = await ledger.store.paused()
        now = ledger.now()
        shown = [
            schedule_out(
                await overview(name, spec, ledger.zone(name), ledger.store, paused=paused, now=now)
            )
            for name, spec in ledger.file.schedules.items()
        ]
        found = beats(await ledger.store.heartbeats(), now)
    running = ledger.running
    scheduler = SchedulerOut(
        runs_here=running is not None,
        health=running.health() if running is not None else None,
        heartbeats=[beat_out(b) for b in found],
    )
    body = ScheduleList(schedules=shown, file_error=ledger.file_error, scheduler=scheduler)
    return _scrubbed(request, body)


@router.get(
    "/{name}/history", summary="A schedule's fires, newest first", response_model=HistoryOut
)
async def schedule_history(
    request: Request,
    name: ScheduleName,
    _: Reader,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> JSONResponse:
    """``staffroom schedules history NAME``. A schedule deleted from the file keeps its
    fires (and so do the built-in ``reflection-<employee>`` ones): 404 only for a name
    neither the file nor the ledger knows."""
    async with _ledger(request) as ledger:
        fires = await ledger.store.history(name, limit=limit)
        if not fires:
            ledger.require(name)
        zone = (
            ledger.zone(name)
            if name in ledger.file.schedules
            else ZoneInfo(ledger.project_tz or "UTC")
        )
    body = HistoryOut(schedule=name, fires=[fire_out(f, zone) for f in fires])
    return _scrubbed(request, body)


def _run_id(header: str | None, body: RunNowBody | None) -> str | None:
    given = body.id if body is not None else None
    if header is not None and given is not None and header != given:
        raise InputError(
            "the Idempotency-Key header and the body's id differ",
            field="id",
            fix='name the run once: the Idempotency-Key header or {"id": ...}',
        )
    return header or given


@router.post(
    "/{name}/run-now",
    status_code=202,
    summary="Start a schedule now (once per id)",
    response_model=RunNowOut,
    responses={200: {"model": RunNowOut, "description": "Ran already under this id"}},
)
async def run_now(
    request: Request,
    name: ScheduleName,
    _: Controller,
    body: Annotated[RunNowBody | None, Body()] = None,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=200,
            pattern=r"^[\x21-\x7e]+$",
            description="Names the run: the same key twice starts one run",
        ),
    ] = None,
) -> JSONResponse:
    """Start the schedule now, paused or not (``staffroom schedules run-now``): 202 with the
    fire, which runs on. The run's id is the ``Idempotency-Key`` header or the body's
    ``id`` (without either: this minute), so a retried request starts one run: the second
    answers 200 with the same fire and ``duplicate: true``. 409 when this server runs no
    schedules (``--no-schedules``)."""
    token = _run_id(idempotency_key, body)
    async with _ledger(request) as ledger:
        ledger.require(name)
        if ledger.running is None:
            raise Problem(
                409,
                "schedules_not_run",
                "this server runs no schedules (it was started with --no-schedules), so it "
                "starts no fire",
                field="schedule",
                fix=f"run `staffroom schedules run-now {name}` on the host that runs the "
                "schedules, or serve without --no-schedules",
            )
        scheduler: Scheduler = ledger.running.scheduler
        token = token or ledger.now().strftime("%Y%m%dT%H%M")  # as Scheduler.run_now's own
        fire = await scheduler.run_now(name, token)
        duplicate = fire is None
        if fire is None:
            fire = await ledger.store.get(run_now_id(name, token))
        assert fire is not None  # claimed now, or by the earlier call
        zone = ledger.zone(name)
    said = (
        f"{fire.fire_id} ran already (one run per id): {fire.state}"
        if duplicate
        else f"{fire.fire_id} started"
    )
    out = RunNowOut(fire=fire_out(fire, zone), duplicate=duplicate, message=said)
    if duplicate:
        return _scrubbed(request, out, 200, **{"Idempotent-Replayed": "true"})
    return _scrubbed(request, out, 202)


async def _set_paused(request: Request, name: str, who: Principal, paused: bool) -> JSONResponse:
    async with _ledger(request) as ledger:
        ledger.require(name)
        by = f"token:{who.name}"
        await ledger.store.set_paused(name, paused, by=by, now=ledger.now())
        shown = await _one(ledger, name)
    return _scrubbed(request, shown)


@router.post("/{name}/pause", summary="Pause a schedule", response_model=ScheduleOut)
async def pause(request: Request, name: ScheduleName, who: Controller) -> JSONResponse:
    """``staffroom schedules pause``: its due times pass unrun (each recorded ``skipped``)
    until it is resumed; pausing a paused schedule keeps its first time."""
    return await _set_paused(request, name, who, True)


@router.post("/{name}/resume", summary="Resume a paused schedule", response_model=ScheduleOut)
async def resume(request: Request, name: ScheduleName, who: Controller) -> JSONResponse:
    """``staffroom schedules resume``: it fires again from its next due time."""
    return await _set_paused(request, name, who, False)


__all__ = ["RunNowBody", "router"]
