"""The knowledge layers from the terminal: trackers, topic files, search.

``staffroom knowledge list|show|stale|review``, and the top-level ``trackers``, ``proposal``
and ``search`` (registered in ``cli/__init__.py``; ``extract``, ``reflect`` and ``forget`` are
in :mod:`framework.surfaces.cli.knowledge_runs`). Reading commands open the data folder
through :meth:`Stores.open`; ``search`` writes the derived index, ``review`` and ``proposal``
change files: those refuse a read-only folder before anything opens.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from framework.names import is_name
from framework.phrases import Phrase
from framework.surfaces.cli.console import LabelConsole, labels_language
from framework.surfaces.cli.options import label_language, settings_for

if TYPE_CHECKING:  # the commands import these when they run: `--help` stays light
    from framework.knowledge.base import KnowledgeBase
    from framework.knowledge.topics import TopicStore
    from framework.stores import Stores

# Piped output gets a wide console so tables keep whole names (terminals use their width).
# Its labels follow the command's settings (see _admin_job).
console = LabelConsole(soft_wrap=True, width=None if sys.stdout.isatty() else 200)

NO_TOPICS = Phrase(
    en="no topic files yet",
    zh="还没有主题文件",
)
TOPIC_COLUMNS = Phrase(
    en="owner|category|topic|entries|superseded|last review|file",
    zh="所属|类别|主题|条目|已取代|上次审阅|文件",
)
"""Column headings of ``knowledge list``, ``|``-separated."""
PARTITIONS = ("shared", "isolated")
app = typer.Typer(help="Topic files: list, show, stale, review.", no_args_is_help=True)

DataDir = Annotated[Path | None, typer.Option("--data-dir", help="Data folder.")]
Project = Annotated[Path | None, typer.Option("--project", help="Project folder.")]
Employee = Annotated[
    str | None,
    typer.Option("--employee", "-e", help="An employee's own topics (default: the library)."),
]
LibraryPart = Annotated[
    str, typer.Option("--library", help="Library partition: shared or isolated.")
]


def _admin_job(
    data_dir: Path | None,
    project: Path | None,
    job: Callable[[KnowledgeBase], Awaitable[int]],
    *,
    writes: str = "",
) -> int:
    """Run ``job`` on the data folder's knowledge layers; ``writes``: the command's name, and
    a read-only folder is refused before anything opens."""
    return _stores_job(data_dir, project, lambda stores: job(stores.knowledge()), writes=writes)


def _stores_job(
    data_dir: Path | None,
    project: Path | None,
    job: Callable[[Stores], Awaitable[int]],
    *,
    writes: str = "",
) -> int:
    """:func:`_admin_job` for a job that needs more of the data folder than its knowledge
    layers (``forget`` reaches MEMORY.md too): the folder's one :class:`Stores`."""
    settings = settings_for(data_dir, project, None)
    console.language = label_language(settings)

    import asyncio

    from framework.stores import Stores

    async def main() -> int:
        stores = await Stores.open(settings=settings, writes=bool(writes), command=writes)
        async with stores:
            return await job(stores)

    return asyncio.run(main())


def _store(kb: KnowledgeBase, employee: str | None, library: str) -> TopicStore:
    """An employee's topics, or a library partition. The CLI's operator owns the data folder,
    so both partitions open here; employees reach the isolated one only through
    ``Library.store``'s entitlement check."""
    if employee is not None:
        return kb.topics(employee)
    if library not in ("shared", "isolated"):
        raise typer.BadParameter("use shared or isolated", param_hint="--library")
    part: Literal["shared", "isolated"] = "isolated" if library == "isolated" else "shared"
    from framework.knowledge.topics import TopicStore

    path = kb.library.path(part)
    return TopicStore(path, categories=kb.config.categories, today=kb.today, locks=kb.locks)


@app.command("list")
def list_(
    employee: Employee = None,
    library: Annotated[
        str | None,
        typer.Option("--library", help="Only this library partition: shared or isolated."),
    ] = None,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Every topic file (every employee's and the library's, unless -e or --library says
    whose): owner, category, slug, entries, last review."""

    async def job(kb: KnowledgeBase) -> int:
        table = Table(*TOPIC_COLUMNS(labels_language(console)).split("|"))
        for owner, store in _owners(kb, employee, library):
            for t in store.list():
                where = str(t.path.relative_to(kb.data_dir))
                table.add_row(
                    owner, t.category, t.slug, str(len(t.entries)), str(len(t.superseded)),
                    str(t.last_review), where,
                )  # fmt: skip
        console.print(table if table.row_count else NO_TOPICS(labels_language(console)))
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job))


def _owners(
    kb: KnowledgeBase, employee: str | None, library: str | None
) -> list[tuple[str, TopicStore]]:
    """Whose topics ``list`` shows: the one asked for, else every employee with a
    ``knowledge/`` folder and both library partitions."""
    if employee is not None or library is not None:
        return [(employee or f"library:{library}", _store(kb, employee, library or "shared"))]
    root = kb.folder.knowledge_dir
    found = sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    owners = [(name, kb.topics(name)) for name in found if is_name(name)]
    return owners + [(f"library:{part}", _store(kb, None, part)) for part in PARTITIONS]


@app.command()
def show(
    topic: Annotated[str, typer.Argument(help="Topic name or slug.")],
    employee: Employee = None,
    library: LibraryPart = "shared",
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """One topic file as it is on disk (entries, superseded ones, change notes)."""

    async def job(kb: KnowledgeBase) -> int:
        found = _store(kb, employee, library).show(topic)
        console.print(f"[bold]{escape(str(found.path))}[/]")
        console.print(found.render(), markup=False, highlight=False)
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job))


@app.command()
def stale(
    days: Annotated[int, typer.Option("--days", min=0, help="Not reviewed in this many days.")],
    employee: Employee = None,
    library: LibraryPart = "shared",
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Topic files not reviewed in N days, least recently reviewed first."""

    async def job(kb: KnowledgeBase) -> int:
        old = _store(kb, employee, library).stale(days)
        for t in old:
            console.print(
                f"{t.last_review}  {t.category}/{t.slug}  {t.path.relative_to(kb.data_dir)}"
            )
        if not old:
            console.print(f"nothing older than {days} days")
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job))


@app.command()
def review(
    topic: Annotated[str, typer.Argument(help="Topic name or slug.")],
    employee: Employee = None,
    library: LibraryPart = "shared",
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Record that a topic file was reviewed today (it leaves the stale list)."""

    async def job(kb: KnowledgeBase) -> int:
        import asyncio

        done = await asyncio.to_thread(_store(kb, employee, library).review, topic)
        console.print(f"{done.category}/{done.slug}: reviewed {done.last_review}")
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job, writes="knowledge review"))


def trackers(
    employee: Annotated[str, typer.Argument(help="Employee id.")],
    everything: Annotated[
        bool, typer.Option("--all", help="Also done, abandoned and decided items.")
    ] = False,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """An employee's tasks, goals, reflections and the proposals by or for it."""

    async def job(kb: KnowledgeBase) -> int:
        t = kb.trackers
        reflections = t.reflections(employee)
        if everything:
            tasks, goals = t.tasks(employee), t.goals(employee)
            proposals = [p for p in t.proposals() if employee in (p.by, *p.for_)]
        else:
            items = t.open_items(employee)
            tasks, goals, proposals = items.tasks, items.goals, items.proposals
        due = {r.id for r in t.due(employee)}
        for task in tasks:
            wait = f" waiting for {task.waiting_for}" if task.waiting_for else ""
            console.print(
                f"{task.id} [{task.status}] {task.priority} {task.type}: "
                f"{escape(task.task)}{escape(wait)}"
            )
        for goal in goals:
            by = f" (by {goal.target_date})" if goal.target_date else ""
            console.print(f"{goal.id} [{goal.status}] goal: {escape(goal.goal)}{by}")
            for note in goal.progress[-3:]:
                console.print(f"    {escape(str(note))}")
        for r in reflections:
            when = "due now" if r.id in due else f"last run {r.last_run or 'never'}"
            console.print(f"{r.id} [{r.status}] reflection {r.interval}: {escape(r.what)} ({when})")
        for p in proposals:
            console.print(
                f"{p.id} [{p.status}] proposal by {p.by}: {escape(p.recommendation)} "
                f"(seen: {escape(p.observation)})"
            )
        if not (tasks or goals or reflections or proposals):
            console.print(f"no open items for {employee}")
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job))


def proposal(
    proposal_id: Annotated[str, typer.Argument(help="Proposal id, e.g. p-1.")],
    decision: Annotated[str, typer.Argument(help="approve or reject.")],
    by: Annotated[str, typer.Option("--by", help="Who decides (a person's name).")],
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """A person approves or rejects an improvement proposal."""
    if decision not in ("approve", "reject"):
        raise typer.BadParameter("write approve or reject", param_hint="DECISION")

    async def job(kb: KnowledgeBase) -> int:
        import asyncio

        done = await asyncio.to_thread(
            kb.trackers.decide, proposal_id, approve=decision == "approve", by=by, note=note
        )
        console.print(f"{done.id}: {done.status} by {done.decided_by} on {done.decided_at}")
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job, writes="proposal"))


def search(
    query: Annotated[str, typer.Argument(help="Keywords, Chinese or English.")],
    employee: Annotated[
        str | None,
        typer.Option("--employee", "-e", help="Search as this employee (what it may read)."),
    ] = None,
    partition: Annotated[
        str, typer.Option("--partition", help="open (default) or isolated.")
    ] = "open",
    limit: Annotated[int, typer.Option("--limit", min=1, max=50)] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Hits as JSON lines.")] = False,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """BM25 search over topic files, journals and the library (files synced first)."""
    from framework.knowledge.hits import render_hits

    async def job(kb: KnowledgeBase) -> int:
        found = await kb.search(query, employee=employee, partition=partition, limit=limit)
        if as_json:
            for hit in found.hits:
                row = {"doc": hit.doc_id, "source": hit.source, "score": round(hit.score, 4)}
                console.print(json.dumps({**row, "snippet": hit.snippet}, ensure_ascii=False))
        else:
            hits = render_hits(kb, found, budget=10_000, language=labels_language(console))
            console.print(hits, markup=False, highlight=False)
        return 0 if found.hits else 1

    raise typer.Exit(_admin_job(data_dir, project, job, writes="search"))
