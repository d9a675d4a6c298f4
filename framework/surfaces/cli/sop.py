"""``staffroom sop ...``: the SOP library for admins and managers, with readable tables."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from framework.errors import InputError, StorageError
from framework.phrases import Phrase
from framework.surfaces.cli import sop_tables
from framework.surfaces.cli.console import LabelConsole, labels_language
from framework.surfaces.cli.options import label_language

if TYPE_CHECKING:  # imported when a command runs: `staffroom --help` stays light
    from framework.settings import Settings
    from framework.sop.ref import SopRef
    from framework.sop.service import SopService
    from framework.sop.trials import ScenarioTrials

ALREADY = Phrase(
    en="{ref} was already published",
    zh="{ref} 之前已发布",
)

app = typer.Typer(
    help="Versioned SOPs: list, show, diff, review, explain, measure.", no_args_is_help=True
)
# Piped output gets a wide console so tables keep whole ids (terminals use their width).
# Its labels follow the command's settings (see _settings).
console = LabelConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 200)


def _run(
    settings: Settings,
    job: Callable[[SopService], Awaitable[None]],
    *,
    writes: bool = False,
    command: str = "sop",
) -> None:
    """Run ``job`` on the SOP service; a command that only reads also works on a read-only
    data folder (see ``framework.stores``), one that ``writes`` is refused there up front."""
    import asyncio
    import sqlite3

    from framework.stores import Stores

    async def main() -> None:
        stores = await Stores.open(settings=settings, writes=writes, command=command)
        async with stores:
            service = await stores.sops()
            try:
                await job(service)
            except sqlite3.Error as exc:  # e.g. a read-only store written by another version
                path = service.store.path
                raise StorageError(f"cannot read the SOP store {path}: {exc}") from exc

    asyncio.run(main())


def _settings(ctx: typer.Context) -> Settings:
    """The command's settings; the console's labels set to the language they name."""
    from framework.settings import Settings

    obj = ctx.obj or {}
    settings = Settings.from_env(data_dir=obj.get("data_dir"), project_dir=obj.get("project"))
    console.language = label_language(settings)
    return settings


async def _ref(service: SopService, text: str, *, required: bool) -> SopRef:
    """``ID`` or ``ID@VERSION`` checked against the store: the SOP exists, and the version
    is a number it holds (``tech-article@x`` used to show v1). ``required``: a command that
    changes one version needs the ``@VERSION``. Errors list the versions there are."""
    from framework.sop.ref import SopRef
    from framework.sop.service import ensure_known

    sop_id = SopRef.id_of(text)
    ensure_known(sop_id, await service.store.sop_ids())
    held = [v.version for v in await service.store.versions(sop_id)]
    try:
        ref = SopRef.parse(text, field="version", require_version=required)
    except InputError as exc:
        why = exc.message  # said again below with the versions there are
    else:
        if ref.version is None or ref.version in held:
            return ref
        why = f"SOP '{sop_id}' has no version {ref.version}"
    listed = ", ".join(str(SopRef(sop_id, n)) for n in held)
    raise InputError(why, field="version", fix=f"write ID@VERSION; versions: {listed}")


@app.callback()
def options(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option("--data-dir", help="Data folder.")] = None,
    project: Annotated[Path | None, typer.Option("--project", help="Project folder.")] = None,
) -> None:
    """Options shared by the sop commands."""
    ctx.obj = {"data_dir": data_dir, "project": project}


@app.command("list")
def list_(ctx: typer.Context) -> None:
    """Every SOP with its versions, status and run counts."""

    async def job(service: SopService) -> None:
        await sop_tables.list_versions(service, console)

    _run(_settings(ctx), job)


@app.command()
def show(ctx: typer.Context, ref: Annotated[str, typer.Argument(help="ID or ID@VERSION")]) -> None:
    """One version: steps, change log, approvals."""

    async def job(service: SopService) -> None:
        chosen = await _ref(service, ref, required=False)
        v = await service.store.get(chosen.sop_id, chosen.version)
        await sop_tables.show_version(service, v, console)

    _run(_settings(ctx), job)


@app.command()
def diff(ctx: typer.Context, sop_id: str, v1: int, v2: int) -> None:
    """Step-level diff between two versions."""
    from framework.sop.edits import diff_steps
    from framework.sop.service import ensure_known

    async def job(service: SopService) -> None:
        ensure_known(sop_id, await service.store.sop_ids())
        a, b = await service.store.get(sop_id, v1), await service.store.get(sop_id, v2)
        for line in diff_steps(a.steps, b.steps):
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
            console.print(f"[{style}]{escape(line)}[/]")
        for entry in b.change_log:
            if entry.version > a.version:
                console.print(f"v{entry.version}: {escape(entry.why)}")

    _run(_settings(ctx), job)


def _by(who: str) -> Any:
    """The ``--by`` option of a command that records a person; :func:`_person` resolves it
    (``who``: its help, what the person does)."""
    return typer.Option("--by", help=f"{who} (default: your login name).")


@app.command()
def approve(
    ctx: typer.Context,
    ref: str,
    reviewer: Annotated[str, typer.Option("--by", help="The reviewer who approves.")],
) -> None:
    """Record a reviewer's approval of a draft (ID@VERSION)."""

    async def job(service: SopService) -> None:
        from framework.sop import drafting  # loads the SOP service: only when the command runs

        name = _named(reviewer, "--by")
        chosen = await _ref(service, ref, required=True)
        v = await drafting.approve(service, chosen.sop_id, chosen.version or 0, name)
        approved = ", ".join(a.reviewer for a in v.approvals)
        said = sop_tables.APPROVED_BY(labels_language(console), ref=v.ref, reviewers=approved)
        console.print(escape(said))
        await sop_tables.print_waiting(service, v, console)

    _run(_settings(ctx), job, writes=True, command="sop approve")


@app.command()
def publish(
    ctx: typer.Context,
    ref: str,
    reviewers: Annotated[
        list[str] | None, typer.Option("--require", help="Reviewer who must have approved.")
    ] = None,
    by: Annotated[str | None, _by("Who publishes")] = None,
) -> None:
    """Publish a draft (ID@VERSION) once its reviewers approved: those recorded when it was
    proposed and every --require (nobody named: one approval by anyone). Over a published
    version it runs as a trial beside the best first (see `sop explain`). Who published it
    goes to its change log."""

    async def job(service: SopService) -> None:
        from framework.sop import drafting
        from framework.sop.model import Status

        person, required = _person(by), [_named(r, "--require") for r in reviewers or []]
        chosen = await _ref(service, ref, required=True)
        before = await service.store.get(chosen.sop_id, chosen.version)
        v = await drafting.publish(
            service, chosen.sop_id, chosen.version or 0, required=required, by=person
        )
        language = labels_language(console)
        if before.status is Status.PUBLISHED:
            console.print(escape(ALREADY(language, ref=v.ref)))
            return
        # Which rooms run it now: a trial in a share of each scenario's rooms, or all of them.
        for line in await service.who_runs(v, _trial_settings(settings, v.sop_id), language):
            console.print(escape(line))

    settings = _settings(ctx)
    _run(settings, job, writes=True, command="sop publish")


SAVED_DRAFT = Phrase(
    en="{ref}: saved as a draft awaiting review",
    zh="{ref}：已保存为草稿，等待审阅",
)
NO_AUTHOR = Phrase(
    en="who wrote the edit is not known",
    zh="不知道是谁写的修改",
)
NO_AUTHOR_FIX = Phrase(
    en="name them with --by NAME",
    zh="用 --by 名字 写明作者",
)


@app.command()
def edit(
    ctx: typer.Context,
    sop_id: str,
    note: Annotated[str, typer.Option("--note", help="Why it changed (its change log).")],
    card: Annotated[
        Path | None,
        typer.Option("--card", exists=True, dir_okay=False, help="The whole card, edited."),
    ] = None,
    goal: Annotated[str | None, typer.Option("--goal", help="A new goal, steps kept.")] = None,
    base: Annotated[
        int | None, typer.Option("--base", help="The version it edits (default: the latest).")
    ] = None,
    reviewers: Annotated[
        list[str] | None, typer.Option("--reviewer", help="Who must approve it first.")
    ] = None,
    by: Annotated[str | None, _by("Who wrote it")] = None,
) -> None:
    """Save an edit as the next version, a draft awaiting review: the rules of the server's
    edits (framework.sop.drafting): the scope stays, approvals are not written in the card,
    and an edit of a draft keeps the reviewers it awaited."""

    async def job(service: SopService) -> None:
        from framework.sop.drafting import CLI, Edit, save_edit

        author = _person(by)
        if author is None:
            language = labels_language(console)
            raise InputError(NO_AUTHOR(language), field="--by", fix=NO_AUTHOR_FIX(language))
        named = [_named(r, "--reviewer") for r in reviewers or []]
        text = card.read_text(encoding="utf-8") if card is not None else None
        made = Edit(author, note, base, card=text, goal=goal, reviewers=named, surface=CLI)
        v = await save_edit(service, sop_id, made)
        console.print(escape(SAVED_DRAFT(labels_language(console), ref=v.ref)))
        await sop_tables.print_waiting(service, v, console)

    _run(_settings(ctx), job, writes=True, command="sop edit")


def _trial_settings(settings: Settings, sop_id: str) -> list[ScenarioTrials]:
    """The trial settings of each of the project's scenarios that runs ``sop_id``."""
    from framework.sop.trials import ScenarioTrials, TrialPolicy
    from framework.specs.catalog import Catalog

    catalog = Catalog.for_project(settings.project_dir)
    return [
        ScenarioTrials(s.id, TrialPolicy(s.settings.sop_trial_share, s.settings.sop_trial_runs))
        for s in catalog.scenarios.values()
        if sop_id in s.referenced_sop_ids()
    ]


@app.command()
def deprecate(
    ctx: typer.Context,
    ref: str,
    reason: Annotated[str, typer.Option("--why")],
    by: Annotated[str | None, _by("Who retires it")] = None,
) -> None:
    """Deprecate a version (ID@VERSION); it stays for replay."""

    async def job(service: SopService) -> None:
        person = _person(by)
        chosen = await _ref(service, ref, required=True)
        v = await service.store.deprecate(chosen.sop_id, chosen.version or 0, reason, by=person)
        console.print(f"{v.ref} is {v.status}")

    _run(_settings(ctx), job, writes=True, command="sop deprecate")


def _person(by: str | None) -> str | None:
    """Who a publish, deprecation or edit records: ``--by`` (checked as the server checks a
    name), else the login name (None if unknown)."""
    if by is not None:
        return _named(by, "--by")
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment
        return None


def _named(name: str, option: str) -> str:
    """A person named by ``option``, trimmed; an empty or overlong name is refused with the
    rule the server's bodies follow (:func:`framework.sop.drafting.person_named`)."""
    from framework.sop.drafting import person_named

    return person_named(name, field=option, language=labels_language(console))


@app.command()
def explain(ctx: typer.Context, sop_id: str) -> None:
    """Every candidate's score and why the winner won; trials and their verdicts."""
    from framework.sop.service import ensure_known

    async def job(service: SopService) -> None:
        ensure_known(sop_id, await service.store.sop_ids())
        for line in await service.explain(sop_id):
            console.print(escape(line))

    _run(_settings(ctx), job)


@app.command()
def metrics(ctx: typer.Context, sop_id: str) -> None:
    """Run metrics per version."""
    from framework.sop.service import ensure_known

    async def job(service: SopService) -> None:
        ensure_known(sop_id, await service.store.sop_ids())
        await sop_tables.metrics_table(service, sop_id, console)

    _run(_settings(ctx), job)


@app.command()
def report(ctx: typer.Context, sop_id: str) -> None:
    """The managers' view: hit rate per user, the correction trajectory, what was replaced,
    the recurring reasons runs lacked evidence of work, and conflicting requests."""
    from framework.sop.service import ensure_known

    async def job(service: SopService) -> None:
        ensure_known(sop_id, await service.store.sop_ids())
        await sop_tables.report(service, sop_id, console)

    _run(_settings(ctx), job)


@app.command("import")
def import_(ctx: typer.Context, folder: Annotated[Path | None, typer.Argument()] = None) -> None:
    """Import SOP cards (default: the project's sop_library/)."""
    settings = _settings(ctx)
    source = folder or settings.project_dir / "sop_library"
    if not source.is_dir():  # import_library reads a missing folder as "no cards"
        what = "no such folder" if not source.exists() else "not a folder"
        raise InputError(
            what,
            file=source,
            fix="name the folder holding the SOP cards (<id>/v<N>.md), e.g. sop_library/",
        )

    async def job(service: SopService) -> None:
        from framework.sop.library_io import import_library

        sop_tables.print_import(source, await import_library(service.store, source), console)

    _run(settings, job, writes=True, command="sop import")


@app.command()
def export(ctx: typer.Context, folder: Path) -> None:
    """Write every version as a card file (folder/<id>/v<N>.md) for review in git."""

    async def job(service: SopService) -> None:
        from framework.sop.library_io import export_library

        for path in await export_library(service.store, folder):
            console.print(str(path))

    _run(_settings(ctx), job)
