"""``staffroom validate`` and ``staffroom schema``."""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from framework.data_folder import DataFolder
from framework.errors import InputError, StorageError, UnknownNameError
from framework.phrases import Phrase
from framework.settings import Settings
from framework.sop.library_io import import_problems
from framework.sop.model import SopVersion
from framework.specs.catalog import Catalog
from framework.specs.json_schema import schemas
from framework.specs.knowledge_file import KNOWLEDGE_FILE, load_knowledge_file
from framework.specs.models_file import MODELS_FILE, model_problems
from framework.specs.project import SCENARIOS, SOPS, YAML_SUFFIXES, project_root
from framework.specs.scenario import load_scenario
from framework.specs.schedules_file import SCHEDULES_FILE
from framework.specs.sop_card import load_sop_card
from framework.specs.validation import spec_files, validate_paths
from framework.surfaces.cli.console import labels_language

PROBLEMS = Phrase(
    en="{n} problem(s)",
    zh="{n} 个问题",
)
VALID = Phrase(
    en="{paths}: valid",
    zh="{paths}：有效",
)


def validate(paths: list[Path], settings: Settings, console: Console) -> int:
    """Check files and folders; print every problem found; 0 when all are valid.

    Scenarios are checked against the SOP store too (read-only, nothing imported), so an SOP
    published only there is known, as it is to ``run``; so are the SOP cards ``run`` would
    import for these paths (a card that edits a stored version in place, or skips a number, is
    refused there), and a damaged store is reported. ``knowledge.yaml`` and
    ``schedules.yaml`` are checked when the project or a named folder has one."""
    project = settings.project_dir
    # A path in the project (as errors name files: scenarios/x.yaml) runs from any folder.
    paths = [
        p if p.is_absolute() or p.exists() or not (project / p).exists() else project / p
        for p in paths
    ]
    catalog = Catalog.load(project / "agents", project / "scenarios", project / "sop_library")
    # The data folder holds a team's notes and logs, never its specs: it is not walked.
    skip = [settings.data_dir]
    store = asyncio.run(_store_view(settings, _libraries(paths, project, skip)))
    errors = validate_paths(paths, catalog, store.bests, skip)
    errors += [p for p in store.problems if str(p) not in {str(e) for e in errors}]
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
        schedules = root / SCHEDULES_FILE
        # Checked with the project even when only some of its folders are named (as
        # knowledge.yaml is); a walk over the project has checked it already.
        if schedules.is_file() and not any(_covers(p, schedules) for p in paths):
            found_here = validate_paths([schedules], catalog)
            errors += [p for p in found_here if str(p) not in {str(e) for e in errors}]
    shown = [e.render() for e in errors] + ([str(store.damage)] if store.damage else [])
    for problem in shown:
        console.print(f"[red]✗[/] {escape(problem)}", highlight=False)
    language = labels_language(console)
    if shown:
        console.print(f"[red]{PROBLEMS(language, n=len(shown))}[/]")
        return 1
    valid = VALID(language, paths=", ".join(str(p) for p in paths))
    console.print(f"[green]✓[/] {escape(valid)}")
    return 0


def _covers(path: Path, file: Path) -> bool:
    """Whether validating ``path`` checks ``file`` (it is the file, or a folder above it)."""
    path, file = path.resolve(), file.resolve()
    return path == file or path in file.parents


@dataclass
class _StoreView:
    """What ``run`` would find in the SOP store for the paths validated."""

    bests: dict[str, SopVersion] = field(default_factory=dict)
    """The best version of each SOP it publishes."""
    problems: list[InputError] = field(default_factory=list)
    """Cards of the libraries ``run`` imports that it would refuse (see ``import_problems``)."""
    damage: StorageError | None = None
    """The store cannot be read (the files are still checked without it)."""


async def _store_view(settings: Settings, libraries: dict[Path, set[str]]) -> _StoreView:
    """The store as ``run`` sees it, read-only and importing nothing (no store: an empty one);
    ``libraries``: the SOPs of each library whose cards are checked against it."""
    view = _StoreView()
    folder = DataFolder(settings.data_dir)
    # With a database the store is there, not in sops.sqlite (a folder that records one and a
    # command without it: Stores.open says so).
    if settings.database is None and folder.database() is None and not folder.sops.is_file():
        for library, ids in libraries.items():
            found = await import_problems(None, library)
            view.problems += [found[i] for i in sorted(ids) if i in found]
        return view
    from framework.stores import Stores  # a store to read: open it as `run` would

    try:
        async with await Stores.open(settings=settings) as stores:
            service = await stores.sops(import_cards=False)
            for sop_id in await service.store.sop_ids():
                with suppress(UnknownNameError):  # drafts only: not a version rooms can use
                    view.bests[sop_id] = await service.best(sop_id)
            for library, ids in libraries.items():
                found = await import_problems(service.store, library)
                view.problems += [found[i] for i in sorted(ids) if i in found]
    except StorageError as exc:
        return _StoreView(damage=exc)
    return view


def _libraries(paths: list[Path], project: Path, skip: list[Path]) -> dict[Path, set[str]]:
    """The ``sop_library/`` folders ``run`` imports for what ``paths`` hold, each with the
    SOPs that concern them: a card's own SOP (in the library it is in), and the SOPs a
    scenario uses (in its project's library, else the current project's). An SOP no named
    file uses is not theirs to report (a broken file stops only what uses it)."""
    found: dict[Path, tuple[Path, set[str]]] = {}  # named as the paths name it: errors say so
    for path in paths:
        files = [path] if path.is_file() else spec_files(path, skip) if path.is_dir() else []
        for file in files:
            library, ids = _library_of(file, file == path, project)
            if library is not None and ids and library.is_dir():
                found.setdefault(library.resolve(), (library, set()))[1].update(ids)
    return dict(found.values())


def _library_of(file: Path, named: bool, project: Path) -> tuple[Path | None, list[str]]:
    """The library ``run`` imports for ``file`` and the SOPs it concerns (none for a file
    that does not load: validation reports it)."""
    try:
        if file.suffix == ".md":
            library = next((p for p in file.parents if p.name == SOPS), None)
            return library, [load_sop_card(file).id] if library is not None else []
        if file.suffix in YAML_SUFFIXES and (named or file.parent.name == SCENARIOS):
            own = project_root(file) / SOPS
            return own if own.is_dir() else project / SOPS, load_scenario(file).referenced_sop_ids()
    except InputError:
        pass
    return None, []


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
