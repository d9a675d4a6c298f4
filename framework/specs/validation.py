"""``staffroom validate``'s engine: every spec file under the given paths, every problem.

Each file is checked on its own (YAML, fields, limits), then against its project: a scenario's
participants, SOPs and sop template; an SOP card's speakers. Problems are collected, never
raised, so one run lists all of them with their files and lines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from framework.data_folder import MANIFEST
from framework.errors import CardError, InputError, ScenarioError

from ._explain import did_you_mean
from .catalog import Catalog
from .employee import load_card
from .models_file import MODELS_FILE, ModelRegistry
from .project import (
    AGENTS,
    SCENARIOS,
    SOPS,
    YAML_SUFFIXES,
    card_project,
    load_by_id,
    project_root,
)
from .project_file import PROJECT_FILE, load_project_file
from .scenario import load_scenario
from .scenario_checks import StoredSop, card_speaker_problems
from .schedule_delivery import delivery_problems
from .schedules_file import SCHEDULES_FILE, load_schedules, schedule_problems
from .sop_card import SopLibrary, has_front_matter, load_sop_card
from .yaml_loader import load_yaml_file


def validate_paths(
    paths: Iterable[str | Path],
    catalog: Catalog | None = None,
    stored: Mapping[str, StoredSop] | None = None,
    skip: Iterable[Path] = (),
) -> list[InputError]:
    """Check every spec file in ``paths`` (folders: recursively); return all problems found.

    ``models.yaml``, ``staffroom.yaml`` and ``schedules.yaml`` are known by their names (the
    scenarios and employees schedules name are checked against their project). The kind of any
    other file is read from its content: markdown with front matter is an SOP card, YAML with
    ``participants`` a scenario, YAML with ``persona`` or ``role`` an employee card (the folder
    name decides when the content cannot). Scenarios and SOP cards are cross-checked against
    their own project (see :meth:`Catalog.for_scenario_file`), falling back to ``catalog`` or,
    when None, to the project in the current folder. ``stored``: the SOP store's best version
    of each SOP (the store is the source of truth: an SOP published only there is known to a
    scenario). A named folder is walked without entering ``skip`` (the data folder), any other
    data folder, or hidden folders (see :func:`spec_files`).
    """
    checker = _Checker(catalog, stored)
    for path in _expand(paths, skip):
        checker.check(path)
    return checker.problems


def spec_files(folder: Path, skip: Iterable[Path] = ()) -> list[Path]:
    """The files under ``folder`` a project's specs may be in, sorted. Hidden folders
    (``.staffroom``, ``.git``) and data folders (``skip``, or any folder holding a data
    folder's store record) are not entered: the notes, logs and workspaces in them are a
    team's data, not its specs, whatever they look like."""
    skipped = {p.resolve() for p in skip}
    found: list[Path] = []
    for current, dirs, files in os.walk(folder):
        here = Path(current)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and (here / d).resolve() not in skipped
            and not (here / d / MANIFEST).is_file()
        )
        found += [here / f for f in files if Path(f).suffix in (*YAML_SUFFIXES, ".md")]
    return sorted(found)


def _expand(paths: Iterable[str | Path], skip: Iterable[Path]) -> list[tuple[Path, bool]]:
    """``(file, named_explicitly)`` pairs, each file once, in a stable order."""
    skip = list(skip)
    out: dict[Path, bool] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in spec_files(path, skip):
                out.setdefault(found, False)
        else:
            out[path] = True
    return list(out.items())


class _Checker:
    def __init__(self, catalog: Catalog | None, stored: Mapping[str, StoredSop] | None) -> None:
        self._fallback = catalog
        self._stored = stored
        self.problems: list[InputError] = []
        self.sops: dict[Path | None, SopLibrary] = {}
        self.projects: dict[tuple[str, Path], Catalog] = {}
        self.agents: dict[Path, dict[str, InputError]] = {}

    @property
    def fallback(self) -> Catalog:
        if self._fallback is None:
            self._fallback = Catalog.for_project(".")
        return self._fallback

    def add(self, error: InputError) -> None:
        if all(str(error) != str(seen) for seen in self.problems):
            self.problems.append(error)

    def check(self, item: tuple[Path, bool]) -> None:
        path, explicit = item
        try:
            if path.name == MODELS_FILE:
                ModelRegistry.load(path)
            elif path.name == PROJECT_FILE:
                load_project_file(path.parent)
            elif path.name == SCHEDULES_FILE:
                self._schedules(path)
            elif path.suffix == ".md":
                self._sop(path, explicit)
            elif path.suffix in YAML_SUFFIXES or explicit:
                self._yaml(path)
        except InputError as exc:
            self.add(exc)

    def _sop(self, path: Path, explicit: bool) -> None:
        in_library = any(part.name == SOPS for part in path.parents)
        if path.name.lower() == "readme.md" and not explicit:
            return
        # Other markdown (notes, docs) is not ours unless it sits in a library or was named.
        if not (has_front_matter(path) or explicit or in_library):
            return
        card = load_sop_card(path)
        library_root = next((p for p in path.parents if p.name == SOPS), None)
        self.sops.setdefault(library_root, SopLibrary()).add(card)
        project = self._project("card", card_project(path), path)
        for problem in card_speaker_problems(project, card):
            self.add(problem)

    def _yaml(self, path: Path) -> None:
        kind = _kind_of(path)
        if kind == "scenario":
            scenario = load_scenario(path)
            project = self._project("scenario", project_root(path), path)
            for problem in project.scenario_problems(scenario, self._stored):
                self.add(problem)
        elif kind == "employee":
            card = load_card(path)
            folder = next((p for p in path.parents if p.name == AGENTS), None)
            if folder is not None:
                # Its id against the other cards of its folder, as run loads them: an id
                # two cards claim is refused there, whichever file is named here.
                if folder not in self.agents:
                    self.agents[folder] = load_by_id(folder, load_card, CardError).broken
                if (claimed := self.agents[folder].get(card.id)) is not None:
                    self.add(claimed)
        else:
            raise InputError(
                "cannot tell what this file is",
                file=path,
                line=1,
                fix="a scenario has `participants:`, an employee card `role:` and `persona:`; "
                f"or put the file in a {SCENARIOS}/ or {AGENTS}/ folder",
            )

    def _schedules(self, path: Path) -> None:
        schedules = load_schedules(path.parent)
        # The scenarios and employees of the project it is in (as a scenario file's).
        project = self._project("scenario", project_root(path), path)
        employees = {*project.employees, *project.broken_employees}
        scenarios = {*project.scenarios, *project.broken_scenarios}
        for problem in schedule_problems(schedules, employees, scenarios):
            self.add(problem)
        for refused in delivery_problems(schedules):
            self.add(refused)

    def _project(self, kind: str, root: Path, path: Path) -> Catalog:
        key = (kind, root.resolve())
        if key not in self.projects:
            build = Catalog.for_scenario_file if kind == "scenario" else Catalog.for_card_file
            self.projects[key] = build(path, fallback=self.fallback)
        return self.projects[key]


_SCENARIO_KEYS = ("participants", "announcement")
_CARD_KEYS = ("persona", "role", "display_name")


def _kind_of(path: Path) -> str | None:
    error_cls: type[InputError] = {SCENARIOS: ScenarioError, AGENTS: CardError}.get(
        path.parent.name, InputError
    )
    data: Any
    try:
        data, _ = load_yaml_file(path, error_cls=error_cls)
    except InputError:
        if error_cls is InputError:
            raise
        data = None  # the typed loader below reports the syntax error with its own class
    if isinstance(data, dict):
        # Near matches count too, so a misspelt key still gets the right, more precise error.
        keys = [str(key)[:100] for key in data]
        if any(did_you_mean(name, keys) for name in _SCENARIO_KEYS):
            return "scenario"
        if any(did_you_mean(name, keys) for name in _CARD_KEYS):
            return "employee"
    return {SCENARIOS: "scenario", AGENTS: "employee"}.get(path.parent.name)


__all__ = ["validate_paths"]
