"""The knowledge commands that change the layers from a session or by a person's word:
``staffroom extract``, ``reflect`` and ``forget`` (the reading ones are in
:mod:`framework.surfaces.cli.knowledge`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from framework.surfaces.cli.knowledge import DataDir, Project, _stores_job, console
from framework.surfaces.cli.options import settings_for

if TYPE_CHECKING:  # the commands import these when they run: `--help` stays light
    from framework.settings import Settings
    from framework.stores import Stores


def extract(
    session: Annotated[str, typer.Argument(help="Session key, e.g. room:launch-42.")],
    data_dir: DataDir = None,
    project: Project = None,
    model: Annotated[str | None, typer.Option("--model", help="Model that extracts.")] = None,
) -> None:
    """Extract what a session said since its last extraction: journals, items, routing."""
    import asyncio

    from framework.stores import require_writable

    settings = settings_for(data_dir, project, model, uses_model=model is not None)
    require_writable(settings.data_dir, "extract")
    raise typer.Exit(asyncio.run(_extract(settings, session)))


async def _extract(settings: Settings, session: str) -> int:
    from framework.staffroom import Staffroom

    async with await Staffroom.open(settings=settings) as staff:
        done = await staff.extract(session)
    if done.run is None:
        console.print(f"{session}: nothing new to extract")
        return 0
    gate = done.run.gate
    console.print(f"{session}: {len(done.run.items)} item(s) by {', '.join(done.run.by)}")
    said = f"re-scanned ({'; '.join(gate.reasons)})" if gate.fired else "did not fire"
    console.print(f"  self-check gate: {escape(said)}")
    for fallback in done.run.fallbacks:
        console.print(f"  [yellow]fallback:[/] {escape(fallback)}")
    for r in done.routed:
        console.print(f"  {r.category} -> {escape(r.to)} ({r.outcome}): {escape(r.text)}")
    return 0


def forget(
    text: Annotated[str | None, typer.Argument(help="A fact or a word to forget.")] = None,
    person: Annotated[
        str | None, typer.Option("--person", help="Forget everything about this person.")
    ] = None,
    employee: Annotated[
        str | None, typer.Option("--employee", "-e", help="Only this employee's layers.")
    ] = None,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Remove a fact, or everything about a person, from every layer; print what went."""
    if (text is None) == (person is None):
        raise typer.BadParameter("give TEXT or --person NAME (one of them)")

    from framework.knowledge.forget import forget_person, forget_text  # the one command using it

    async def job(stores: Stores) -> int:
        kb, memory = stores.knowledge(), stores.memory
        if person is not None:
            report = await forget_person(kb, person, memory=memory)
        else:
            report = await forget_text(kb, text or "", memory=memory, employee=employee)
        console.print(report.render(), markup=False, highlight=False)
        return 0

    raise typer.Exit(_stores_job(data_dir, project, job, writes="forget"))


def reflect(
    employee: Annotated[str | None, typer.Argument(help="Employee id (default: everyone).")] = None,
    data_dir: DataDir = None,
    project: Project = None,
    model: Annotated[str | None, typer.Option("--model", help="Model that reflects.")] = None,
) -> None:
    """Run the reflections that are due: each reads its journals and knowledge in a session
    whose end is extracted like any other."""
    import asyncio

    from framework.stores import require_writable

    settings = settings_for(data_dir, project, model, uses_model=model is not None)
    require_writable(settings.data_dir, "reflect")
    raise typer.Exit(asyncio.run(_reflect(settings, employee)))


async def _reflect(settings: Settings, employee: str | None) -> int:
    from framework.staffroom import Staffroom

    async with await Staffroom.open(settings=settings) as staff:
        runs = await staff.reflect(employee)
    for run in runs:
        routed = run.knowledge.get("routed", []) if run.knowledge else []
        console.print(
            f"{run.employee} {run.reflection_id}: reflected in {run.session} over "
            f"{run.days_read} journal day(s); {len(routed) if isinstance(routed, list) else 0} "
            "item(s) routed"
        )
    if not runs:
        console.print("no reflection is due")
    return 0
