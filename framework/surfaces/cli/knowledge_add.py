"""``staffroom knowledge add``: a person writes a note into an employee's topic files.

What a team knows before any session taught it (an escalation rule, a customer's contract
tier) goes straight into layer 4: the topic is updated in place like an extracted one (a
duplicate entry is not added twice), and search and prompts find it from then on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from framework.errors import UnknownNameError
from framework.phrases import Phrase
from framework.surfaces.cli.knowledge import (
    DataDir,
    Employee,
    Project,
    _admin_job,
    _store,
    console,
)
from framework.surfaces.cli.options import label_language, settings_for

if TYPE_CHECKING:  # imported when the command runs: `--help` stays light
    from framework.knowledge.base import KnowledgeBase

ADDED = Phrase(
    en="added to {owner}'s {topic} ({file}): {text}",
    zh="已加入 {owner} 的 {topic}（{file}）：{text}",
)
ALREADY = Phrase(
    en="{owner}'s {topic} has this already ({file}); nothing written",
    zh="{owner} 的 {topic} 已有这一条（{file}），未写入",
)
WHOSE = Phrase(
    en="say whose knowledge it is",
    zh="请说明加到谁的知识里",
)
WHOSE_FIX = Phrase(
    en="give -e EMPLOYEE (an employee's topics) or --library shared|isolated",
    zh="用 -e 员工id（员工自己的主题）或 --library shared|isolated",
)
UNKNOWN_EMPLOYEE = Phrase(
    en="unknown employee '{name}'{hint}",
    zh="没有员工 '{name}'{hint}",
)
KNOWN_EMPLOYEES = Phrase(
    en="employees of the project: {names}",
    zh="项目里的员工：{names}",
)


def add(
    topic: Annotated[str, typer.Argument(help="Topic name, e.g. 'escalation rules'.")],
    text: Annotated[str, typer.Argument(help="The entry to add (one line).")],
    employee: Employee = None,
    library: Annotated[
        str | None,
        typer.Option("--library", help="Add to a library partition (shared or isolated)."),
    ] = None,
    category: Annotated[
        str | None,
        typer.Option("--category", help="Where a new topic goes (default: the first one)."),
    ] = None,
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Add a note to an employee's topic (or the library's); a new topic is created."""
    language = label_language(settings_for(data_dir, project, None), lenient=True)
    if (employee is None) == (library is None):
        raise typer.BadParameter(f"{WHOSE(language)}: {WHOSE_FIX(language)}")
    if employee is not None:
        # A typo would start a knowledge folder no employee reads: refuse it by name.
        root = settings_for(data_dir, project, None).project_dir
        from framework.specs._explain import hint
        from framework.specs.catalog import Catalog

        known = sorted(Catalog.for_project(root).employees)
        if employee not in known:
            raise UnknownNameError(
                UNKNOWN_EMPLOYEE(language, name=employee, hint=hint(employee, known)),
                field="--employee",
                fix=KNOWN_EMPLOYEES(language, names=", ".join(known) or "-"),
            )

    async def job(kb: KnowledgeBase) -> int:
        import asyncio

        store = _store(kb, employee, library or "shared")
        where = category or kb.config.categories[0]
        done = await asyncio.to_thread(store.update, topic, where, add=[text])
        t = done.topic
        owner = employee or f"library:{library}"
        values = {"owner": owner, "topic": f"{t.category}/{t.slug}"}
        file = str(t.path.relative_to(kb.data_dir))
        if done.changed:
            console.print(escape(ADDED(language, **values, file=file, text=done.added[0])))
        else:
            console.print(escape(ALREADY(language, **values, file=file)))
        return 0

    raise typer.Exit(_admin_job(data_dir, project, job, writes="knowledge add"))


__all__ = ["add"]
