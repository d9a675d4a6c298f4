"""``staffroom schedules ...``: see, run and steer the project's schedules (schedules.yaml)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from framework.phrases import Phrase
from framework.surfaces.cli.console import LabelConsole
from framework.surfaces.cli.options import DatabaseOption, label_language

if TYPE_CHECKING:  # imported when a command runs: `staffroom --help` stays light
    from framework.schedules.scheduler import Scheduler
    from framework.settings import Settings

app = typer.Typer(
    help="Schedules (schedules.yaml): list, history, run-now, pause, resume, run.",
    no_args_is_help=True,
)
console = LabelConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 200)

HEAD_LIST = Phrase(
    en="schedule|when|zone|next fire|last fire|state",
    zh="计划|时间|时区|下次触发|上次触发|状态",
)
HEAD_HISTORY = Phrase(
    en="fire|due (local)|kind|outcome|detail|session",
    zh="触发|到期（当地）|类型|结果|说明|会话",
)
PAUSED = Phrase(en="paused since {since}", zh="自 {since} 暂停")
ACTIVE = Phrase(en="active", zh="启用")
DISABLED = Phrase(en="disabled in the file", zh="文件中已停用")
NO_SCHEDULES = Phrase(
    en="No schedules: write schedules.yaml at the project root (docs: guides/rhythms.md).",
    zh="没有计划：在项目根目录写 schedules.yaml（文档：guides/rhythms.md）。",
)
RAN = Phrase(en="{fire}: {state} ({detail})", zh="{fire}：{state}（{detail}）")
ALREADY_RAN = Phrase(
    en="{fire} has run already (run-now twice with one id starts one run): {state}",
    zh="{fire} 已经运行过（同一个 id 的 run-now 只运行一次）：{state}",
)
SET_PAUSED = Phrase(en="{schedule} paused", zh="{schedule} 已暂停")
SET_RESUMED = Phrase(en="{schedule} resumed", zh="{schedule} 已恢复")
FILE_BROKEN = Phrase(
    en="schedules.yaml does not load; the last good version stays in force: {error}",
    zh="schedules.yaml 无法加载，仍按上一个正确版本运行：{error}",
)
RUNNING = Phrase(
    en="Scheduler {owner} running (tick {tick:g} s); Ctrl-C stops it after the running fires.",
    zh="调度器 {owner} 运行中（每 {tick:g} 秒）；Ctrl-C 在当前触发结束后停止。",
)


@app.callback()
def options(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Data folder.")] = None,
    project: Annotated[Path | None, typer.Option("--project", help="Project folder.")] = None,
    database: DatabaseOption = None,
) -> None:
    """Options shared by the schedules commands."""
    ctx.obj = {"data_dir": data_dir, "project": project, "database": database}


def _settings(ctx: typer.Context) -> Settings:
    from framework.surfaces.cli.options import settings_for

    obj = ctx.obj or {}
    settings = settings_for(obj.get("data_dir"), obj.get("project"), database=obj.get("database"))
    console.language = label_language(settings)
    return settings


def _with_scheduler(ctx: typer.Context, job: Callable[[Scheduler], Awaitable[None]]) -> None:
    """Open the Staffroom, its fire store and a scheduler (not ticking), run ``job``."""
    import asyncio

    from framework.schedules.fire_store import open_fire_store
    from framework.schedules.runner import Runner
    from framework.schedules.scheduler import Scheduler
    from framework.staffroom import Staffroom

    settings = _settings(ctx)

    async def main() -> None:
        async with await Staffroom.open(settings=settings) as staff:
            db = await staff.stores.database()
            store = await open_fire_store(settings.data_dir, db)
            try:
                await job(Scheduler(staff, store, Runner(staff)))
            finally:
                await store.close()

    asyncio.run(main())


def _local(when: datetime | None, scheduler: Scheduler, schedule: Any = None) -> str:
    if when is None:
        return "-"
    return when.astimezone(scheduler.zone(schedule)).strftime("%Y-%m-%d %H:%M %Z")


def _table(head: Phrase) -> Table:
    table = Table(show_lines=False)
    for column in head(console.language).split("|"):
        table.add_column(column)
    return table


@app.command("list")
def list_(ctx: typer.Context) -> None:
    """Every schedule: when it fires, its next and last fire, paused or not."""
    from framework.schedules.timing import next_due
    from framework.specs.time_fields import format_duration

    async def job(scheduler: Scheduler) -> None:
        file = scheduler.schedules()
        if scheduler.status().file_error:
            console.print(FILE_BROKEN(console.language, error=scheduler.status().file_error))
        if not file.schedules:
            console.print(NO_SCHEDULES(console.language))
            return
        paused = await scheduler.store.paused()
        now = scheduler.clock.now()
        table = _table(HEAD_LIST)
        for name, spec in file.schedules.items():
            zone = scheduler.zone(spec)
            last = await scheduler.store.history(name, limit=1)
            when = (
                spec.cron or f"every {format_duration(spec.every)}"
                if spec.every
                else spec.cron or ""
            )
            state = (
                PAUSED(console.language, since=_local(paused[name], scheduler, spec))
                if name in paused
                else ACTIVE(console.language)
                if spec.enabled
                else DISABLED(console.language)
            )
            shown = f"{_local(last[0].due, scheduler, spec)} {last[0].state}" if last else "-"
            table.add_row(
                name, escape(when), str(zone), _local(next_due(spec, zone, now), scheduler, spec),
                escape(shown), state,
            )  # fmt: skip
        console.print(table)

    _with_scheduler(ctx, job)


@app.command()
def history(
    ctx: typer.Context,
    schedule: Annotated[str | None, typer.Argument(help="One schedule (default: all).")] = None,
    limit: Annotated[int, typer.Option(help="How many fires, newest first.")] = 30,
) -> None:
    """The last fires with their outcome: done, quiet, failed, missed, skipped or running."""

    async def job(scheduler: Scheduler) -> None:
        table = _table(HEAD_HISTORY)
        for fire in await scheduler.store.history(schedule, limit=limit):
            table.add_row(
                escape(fire.fire_id), _local(fire.due, scheduler), fire.kind, fire.state,
                escape(fire.detail[:120]), escape(fire.session or "-"),
            )  # fmt: skip
        console.print(table)

    _with_scheduler(ctx, job)


@app.command("run-now")
def run_now(
    ctx: typer.Context,
    schedule: Annotated[str, typer.Argument(help="The schedule to start now.")],
    fire_id: Annotated[
        str | None,
        typer.Option("--id", help="The run's id (default: this minute): one run per id."),
    ] = None,
) -> None:
    """Start a schedule now and wait for its outcome (paused or not)."""

    async def job(scheduler: Scheduler) -> None:
        fire = await scheduler.run_now(schedule, fire_id)
        if fire is None:
            from framework.schedules.timing import run_now_id

            token = fire_id or scheduler.clock.now().strftime("%Y%m%dT%H%M")
            known = await scheduler.store.get(run_now_id(schedule, token))
            state = known.state if known is not None else "?"
            console.print(
                ALREADY_RAN(console.language, fire=run_now_id(schedule, token), state=state)
            )
            return
        await scheduler.drain()
        done = await scheduler.store.get(fire.fire_id)
        assert done is not None
        console.print(
            RAN(console.language, fire=done.fire_id, state=done.state, detail=done.detail)
        )
        if done.state == "failed":
            raise typer.Exit(1)

    _with_scheduler(ctx, job)


def _set_paused(ctx: typer.Context, schedule: str, paused: bool) -> None:
    from framework.errors import InputError

    async def job(scheduler: Scheduler) -> None:
        if schedule not in scheduler.schedules().schedules:
            raise InputError(
                f"no schedule '{schedule}' in schedules.yaml",
                field="schedule",
                fix="`staffroom schedules list` shows the schedules",
            )
        now = scheduler.clock.now()
        await scheduler.store.set_paused(schedule, paused, by="cli", now=now)
        said = SET_PAUSED if paused else SET_RESUMED
        console.print(said(console.language, schedule=schedule))

    _with_scheduler(ctx, job)


@app.command()
def pause(ctx: typer.Context, schedule: str) -> None:
    """Stop a schedule firing (its due times are recorded as skipped) until resumed."""
    _set_paused(ctx, schedule, True)


@app.command()
def resume(ctx: typer.Context, schedule: str) -> None:
    """Let a paused schedule fire again from its next due time."""
    _set_paused(ctx, schedule, False)


@app.command()
def run(
    ctx: typer.Context,
    tick: Annotated[
        float | None,
        typer.Option(
            min=0.01,
            max=3600,
            help="Seconds between ticks (default: $STAFFROOM_SCHEDULER_TICK, else 5).",
        ),
    ] = None,
) -> None:
    """Run the scheduler here (a host without `staffroom serve`) until Ctrl-C or SIGTERM."""
    import asyncio
    import signal

    async def job(scheduler: Scheduler) -> None:
        if tick is not None:  # else the settings' (the environment's, or 5 s)
            scheduler.tick_seconds = tick
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        console.print(RUNNING(console.language, owner=scheduler.owner, tick=scheduler.tick_seconds))
        await scheduler.run_forever(stop)

    _with_scheduler(ctx, job)
