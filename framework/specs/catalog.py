"""The catalog: every employee, scenario and SOP of a project, and the checks across them.

A project is a folder with ``agents/``, ``scenarios/`` and ``sop_library/``; any may be
missing. A scenario written outside the shipped project (say ``my_team/scenarios/x.yaml``)
uses the ``agents/`` and ``sop_library/`` beside its ``scenarios/`` folder when they exist,
and the catalog it is given (usually the shipped one) for whatever is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from framework.errors import CardError, InputError, ScenarioError, UnknownNameError

from ._explain import did_you_mean, hint
from .employee import EmployeeCard, load_card
from .models_file import MODELS_FILE, ModelRegistry
from .scenario import Scenario, load_scenario
from .sop_card import SopCard, SopLibrary, has_front_matter, load_sop_card
from .yaml_loader import field_name, load_yaml_file

AGENTS, SCENARIOS, SOPS = "agents", "scenarios", "sop_library"
YAML_SUFFIXES = (".yaml", ".yml")


class _Identified(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def source(self) -> Path: ...

    def line_of(self, *path: str | int) -> int | None: ...


S = TypeVar("S", bound=_Identified)


def _yaml_files(folder: Path | None) -> list[Path]:
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.suffix in YAML_SUFFIXES and p.is_file())


def _by_id(
    folder: Path | None, loader: Callable[[Path], S], error_cls: type[InputError]
) -> dict[str, S]:
    found: dict[str, S] = {}
    for path in _yaml_files(folder):
        item = loader(path)
        item_id = item.id
        if item_id in found:
            first = found[item_id]
            raise error_cls(
                f"id '{item_id}' is used twice: also in {first.source}:{first.line_of('id')}",
                file=path,
                line=item.line_of("id"),
                field="id",
                fix="ids must be unique in a folder: rename one of the two",
            )
        found[item_id] = item
    return found


@dataclass
class Catalog:
    """Employees, scenarios and SOPs by id, with the checks that span them."""

    employees: dict[str, EmployeeCard] = field(default_factory=dict)
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    sops: SopLibrary = field(default_factory=SopLibrary)
    agents_dir: Path | None = None
    scenarios_dir: Path | None = None
    sop_dir: Path | None = None

    @classmethod
    def load(
        cls,
        agents_dir: str | Path | None,
        scenarios_dir: str | Path | None,
        sop_dir: str | Path | None,
    ) -> Catalog:
        """Load the three folders (a missing one is empty); the first bad file raises."""
        agents, scenes, sops = (
            Path(d) if d is not None else None for d in (agents_dir, scenarios_dir, sop_dir)
        )
        return cls(
            employees=_by_id(agents, load_card, CardError),
            scenarios=_by_id(scenes, load_scenario, ScenarioError),
            sops=SopLibrary(sops),
            agents_dir=agents,
            scenarios_dir=scenes,
            sop_dir=sops,
        )

    @classmethod
    def for_project(cls, root: str | Path = ".") -> Catalog:
        """The catalog of the project folder ``root`` (``agents/``, ``scenarios/``, ...)."""
        root = Path(root)
        return cls.load(root / AGENTS, root / SCENARIOS, root / SOPS)

    @classmethod
    def for_scenario_file(cls, path: str | Path, *, fallback: Catalog) -> Catalog:
        """The catalog a scenario file runs against: its own project, else ``fallback``.

        Each of ``agents/``, ``sop_library/`` and ``scenarios/`` beside the scenario's folder
        replaces the fallback's when it exists; there is no merging, so what runs is exactly
        what is in one folder.
        """
        root = project_root(Path(path))

        def local(name: str, current: Path | None) -> Path | None:
            candidate = root / name
            if not candidate.is_dir() or (current and candidate.resolve() == current.resolve()):
                return None
            return candidate

        agents, scenes, sops = (
            local(AGENTS, fallback.agents_dir),
            local(SCENARIOS, fallback.scenarios_dir),
            local(SOPS, fallback.sop_dir),
        )
        return cls(
            employees=_by_id(agents, load_card, CardError) if agents else fallback.employees,
            scenarios=_by_id(scenes, load_scenario, ScenarioError)
            if scenes
            else fallback.scenarios,
            sops=SopLibrary(sops) if sops else fallback.sops,
            agents_dir=agents or fallback.agents_dir,
            scenarios_dir=scenes or fallback.scenarios_dir,
            sop_dir=sops or fallback.sop_dir,
        )

    def employee(self, employee_id: str) -> EmployeeCard:
        """The card of ``employee_id``; :class:`UnknownNameError` with a suggestion if none."""
        card = self.employees.get(employee_id)
        if card is None:
            raise _unknown("employee", employee_id, self.employees, self.agents_dir, AGENTS)
        return card

    def scenario(self, id_or_path: str | Path) -> Scenario:
        """A scenario by id, or loaded from a path (``.yaml``/``.yml`` or an existing file)."""
        text = str(id_or_path)
        if isinstance(id_or_path, Path) or text.endswith(YAML_SUFFIXES) or Path(text).is_file():
            return load_scenario(id_or_path)
        found = self.scenarios.get(text)
        if found is None:
            raise _unknown("scenario", text, self.scenarios, self.scenarios_dir, SCENARIOS)
        return found

    def validate_paths(self, paths: Iterable[str | Path]) -> list[InputError]:
        """:func:`validate_paths` with this catalog as the fallback for cross-checks."""
        return validate_paths(paths, self)

    def check_scenario(self, scenario: Scenario) -> None:
        """Raise the first cross-check problem of ``scenario`` (see :meth:`scenario_problems`)."""
        problems = self.scenario_problems(scenario)
        if problems:
            raise problems[0]

    def scenario_problems(self, scenario: Scenario) -> list[InputError]:
        """Every cross-check problem: unknown participants, unknown SOPs, stray SOP speakers."""
        problems: list[InputError] = []
        known = sorted(self.employees)
        for index, name in enumerate(scenario.participants):
            if name not in self.employees:
                problems.append(
                    ScenarioError(
                        f"unknown employee '{name}'{hint(name, known)}",
                        file=scenario.source,
                        line=scenario.line_of("participants", index),
                        field=f"participants[{index}]",
                        fix=f"use a known employee ({', '.join(known) or 'none yet'}) "
                        f"or add {self.agents_dir or AGENTS}/{name}.yaml",
                    )
                )
        for sop_id in scenario.referenced_sop_ids():
            problems.extend(self._sop_problems(scenario, sop_id))
        return problems

    def _sop_problems(self, scenario: Scenario, sop_id: str) -> list[InputError]:
        try:
            self.sops.best(sop_id)
        except UnknownNameError as exc:
            line = scenario.line_of("announcement", "sop")
            error = ScenarioError(
                exc.message, file=scenario.source, line=line, field="announcement.sop", fix=exc.fix
            )
            return [error]
        problems: list[InputError] = []
        for card in self.sops.published(sop_id):
            for index, step in enumerate(card.steps):
                for j, name in enumerate(step.speakers):
                    if self._speaker_ids(scenario, name):
                        continue
                    path: tuple[str | int, ...] = ("steps", index, "speaker")
                    if isinstance(step.speaker, list):
                        path = (*path, j)
                    problems.append(self._stray_speaker(scenario, card, path, name))
        return problems

    def _stray_speaker(
        self, scenario: Scenario, card: SopCard, path: tuple[str | int, ...], name: str
    ) -> ScenarioError:
        choices = self._speaker_choices(scenario)
        # A known employee left out of the room is not a typo: suggesting a participant misleads.
        known = name in self.employees or any(c.role == name for c in self.employees.values())
        guess = "" if known else hint(name, choices)
        return ScenarioError(
            f"speaker '{name}'{guess} of SOP {card.ref} is not a participant of "
            f"scenario '{scenario.id}' ({scenario.source}:{scenario.line_of('participants')})",
            file=card.source,
            line=card.line_of(*path),
            field=field_name(path),
            fix=f"use a participant's id or role ({', '.join(choices)}), or add the employee "
            f"to participants in {scenario.source}",
        )

    def resolve_speaker(self, scenario: Scenario, speaker: str) -> str:
        """The employee id an SOP step's ``speaker`` means in ``scenario``.

        An id wins over a role; when several participants share a role, the first listed
        speaks. :class:`UnknownNameError` if no participant matches.
        """
        matches = self._speaker_ids(scenario, speaker)
        if not matches:
            choices = self._speaker_choices(scenario)
            raise UnknownNameError(
                f"no participant of scenario '{scenario.id}' is '{speaker}'"
                + hint(speaker, choices),
                file=scenario.source,
                line=scenario.line_of("participants"),
                field="participants",
                fix=f"name a participant by id or role: {', '.join(choices)}",
            )
        return matches[0]

    def _speaker_ids(self, scenario: Scenario, speaker: str) -> list[str]:
        if speaker in scenario.participants:
            return [speaker]
        return [
            pid
            for pid in scenario.participants
            if pid in self.employees and self.employees[pid].role == speaker
        ]

    def _speaker_choices(self, scenario: Scenario) -> list[str]:
        roles = [self.employees[p].role for p in scenario.participants if p in self.employees]
        return list(dict.fromkeys([*scenario.participants, *roles]))


def _unknown(
    kind: str, name: str, known: Iterable[str], folder: Path | None, default: str
) -> UnknownNameError:
    names = sorted(known)
    return UnknownNameError(
        f"unknown {kind} '{name}'{hint(name, names)}",
        field=kind,
        fix=f"known {kind}s: {', '.join(names) or '(none)'}; files live in {folder or default}/",
    )


def project_root(scenario_path: Path) -> Path:
    """The project folder of a scenario file: the parent of its ``scenarios/`` folder."""
    folder = scenario_path.parent
    return folder.parent if folder.name == SCENARIOS else folder


# --- validate_paths: check many files, collecting every problem instead of stopping ---


def validate_paths(paths: Iterable[str | Path], catalog: Catalog | None = None) -> list[InputError]:
    """Check every spec file in ``paths`` (folders: recursively); return all problems found.

    The kind of a file is read from its content: markdown with front matter is an SOP card,
    YAML with ``participants`` a scenario, YAML with ``persona`` or ``role`` an employee card
    (the folder name decides when the content cannot). Scenarios are cross-checked against
    their own project (see :meth:`Catalog.for_scenario_file`), falling back to ``catalog`` or,
    when None, to the project in the current folder.
    """
    checker = _Checker(catalog)
    for path in _expand(paths):
        checker.check(path)
    return checker.problems


def _expand(paths: Iterable[str | Path]) -> list[tuple[Path, bool]]:
    """``(file, named_explicitly)`` pairs, each file once, in a stable order."""
    out: dict[Path, bool] = {}
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                if found.is_file() and found.suffix in (*YAML_SUFFIXES, ".md"):
                    out.setdefault(found, False)
        else:
            out[path] = True
    return list(out.items())


class _Checker:
    def __init__(self, catalog: Catalog | None) -> None:
        self.fallback = catalog
        self.problems: list[InputError] = []
        self.sops: dict[Path | None, SopLibrary] = {}
        self.projects: dict[Path, Catalog | None] = {}

    def add(self, error: InputError) -> None:
        if all(str(error) != str(seen) for seen in self.problems):
            self.problems.append(error)

    def check(self, item: tuple[Path, bool]) -> None:
        path, explicit = item
        try:
            if path.name == MODELS_FILE:
                ModelRegistry.load(path)
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

    def _yaml(self, path: Path) -> None:
        kind = _kind_of(path)
        if kind == "scenario":
            scenario = load_scenario(path)
            project = self._project(path)
            if project is not None:
                for problem in project.scenario_problems(scenario):
                    self.add(problem)
        elif kind == "employee":
            load_card(path)
        else:
            raise InputError(
                "cannot tell what this file is",
                file=path,
                line=1,
                fix="a scenario has `participants:`, an employee card `role:` and `persona:`; "
                f"or put the file in a {SCENARIOS}/ or {AGENTS}/ folder",
            )

    def _project(self, scenario_path: Path) -> Catalog | None:
        root = project_root(scenario_path).resolve()
        if root not in self.projects:
            try:
                self.fallback = self.fallback or Catalog.for_project(".")
                self.projects[root] = Catalog.for_scenario_file(
                    scenario_path, fallback=self.fallback
                )
            except InputError as exc:
                # The broken card is reported on its own; cross-checks need a whole catalog.
                self.add(exc)
                self.projects[root] = None
        return self.projects[root]


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
        keys = [str(key) for key in data]
        if any(did_you_mean(name, keys) for name in _SCENARIO_KEYS):
            return "scenario"
        if any(did_you_mean(name, keys) for name in _CARD_KEYS):
            return "employee"
    return {SCENARIOS: "scenario", AGENTS: "employee"}.get(path.parent.name)


__all__ = ["Catalog", "project_root", "validate_paths"]
