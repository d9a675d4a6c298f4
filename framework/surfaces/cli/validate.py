"""``staffroom validate`` and ``staffroom schema``."""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import suppress
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from framework.data_folder import DataFolder
from framework.errors import InputError, StorageError, UnknownNameError
from framework.settings import Settings
from framework.sop.model import SopVersion
from framework.specs.catalog import Catalog
from framework.specs.json_schema import schemas
from framework.specs.knowledge_file import KNOWLEDGE_FILE, load_knowledge_file
from framework.specs.models_file import MODELS_FILE, model_problems
from framework.staffroom import Staffroom


def validate(paths: list[Path], settings: Settings, console: Console) -> int:
    """Check files and folders; print every problem found; 0 when all are valid.

    Scenarios are checked against the SOP store too (read-only, nothing imported), so an SOP
    published only there is known, as it is to ``run``; ``knowledge.yaml`` is checked when the
    project or a named folder has one."""
    project = settings.project_dir
    catalog = Catalog.load(project / "agents", project / "scenarios", project / "sop_library")
    errors = catalog.validate_paths(paths, asyncio.run(_stored_bests(settings)))
    # models.yaml and the model names cards use, for the project and any project folder named.
    roots = {project.resolve(): catalog}
    for path in paths:
        if path.is_dir() and ((path / MODELS_FILE).is_file() or (path / "agents").is_dir()):
            try:
                roots.setdefault(path.resolve(), Catalog.for_project(path))
            except InputError as exc:  # already reported per file above, unless it is new
                if str(exc) not in {str(e) for e in errors}:
                    errors.append(exc)
    for root, found in roots.items():
        problems = model_problems(root, found.employees.values(), found.scenarios.values())
        errors += [p for p in problems if str(p) not in {str(e) for e in errors}]
        try:
            load_knowledge_file(root / KNOWLEDGE_FILE)
        except InputError as exc:
            errors.append(exc)
    for error in errors:
        console.print(f"[red]✗[/] {escape(error.render())}", highlight=False)
    if errors:
        console.print(f"[red]{len(errors)} problem(s)[/]")
        return 1
    console.print(f"[green]✓[/] {', '.join(str(p) for p in paths)}: valid")
    return 0


async def _stored_bests(settings: Settings) -> dict[str, SopVersion]:
    """The store's best version of each SOP it publishes ({} when the folder has no store)."""
    if not DataFolder(settings.data_dir).sops.is_file():
        return {}
    bests: dict[str, SopVersion] = {}
    try:
        async with await Staffroom.admin(settings=settings) as admin:
            service = await admin.sops(import_cards=False)
            for sop_id in await service.store.sop_ids():
                with suppress(UnknownNameError):  # drafts only: not a version rooms can use
                    bests[sop_id] = await service.best(sop_id)
    except StorageError:
        return {}  # a damaged store is doctor's to report; the files are still checked
    return bests


def print_schema(kind: str | None, console: Console) -> int:
    """Print JSON Schema for editors (all kinds, or one)."""
    all_schemas = schemas()
    if kind is not None and kind not in all_schemas:
        console.print(f"[red]unknown kind '{kind}'[/]; choose one of {', '.join(all_schemas)}")
        return 2
    out = all_schemas[kind] if kind else all_schemas
    # Plain stdout: rich would wrap long lines and break the JSON.
    sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    return 0
