"""The catalog: every employee, scenario and SOP of a project, by id.

A project is a folder with ``agents/``, ``scenarios/`` and ``sop_library/``; any may be
missing. A scenario written outside the shipped project (say ``my_team/scenarios/x.yaml``)
uses the ``agents/`` and ``sop_library/`` beside its ``scenarios/`` folder when they exist,
and the catalog it is given (usually the shipped one) for whatever is missing.

Loading never stops at a broken file: its error is kept (:attr:`Catalog.problems`) and raised
when what it defines is looked up, so ``run other-scenario``, ``dm`` and ``validate good.yaml``
work while one file is being fixed. The checks across files live in
:mod:`framework.specs.scenario_checks`, and ``staffroom validate``'s walk over files in
:mod:`framework.specs.validation` (which builds catalogs, so this module never imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from framework.errors import CardError, InputError, ScenarioError, UnknownNameError
from framework.phrases import Language

from ._explain import hint
from .employee import EmployeeCard, load_card
from .project import (
    AGENTS,
    SCENARIOS,
    SOPS,
    YAML_SUFFIXES,
    card_project,
    load_by_id,
    project_root,
)
from .scenario import Scenario, load_scenario
from .scenario_checks import StoredSop, resolve_speaker, scenario_problems
from .sop_card import SopLibrary

if TYPE_CHECKING:  # annotations only: `staffroom validate` skips the session layer
    from framework.sessions.payloads import EntryPayload

_T = TypeVar("_T")


@dataclass
class Catalog:
    """Employees, scenarios and SOPs by id, with the files that did not load kept aside."""

    employees: dict[str, EmployeeCard] = field(default_factory=dict)
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    sops: SopLibrary = field(default_factory=SopLibrary)
    agents_dir: Path | None = None
    scenarios_dir: Path | None = None
    sop_dir: Path | None = None
    broken_employees: dict[str, InputError] = field(default_factory=dict)
    """Errors of cards that did not load, by the ids they may be meant for."""
    broken_scenarios: dict[str, InputError] = field(default_factory=dict)
    """Errors of scenario files that did not load, by the ids they may be meant for."""
    problems: list[InputError] = field(default_factory=list)
    """Every file that did not load (cards, scenarios, SOP cards), in folder order."""

    @classmethod
    def load(
        cls,
        agents_dir: str | Path | None,
        scenarios_dir: str | Path | None,
        sop_dir: str | Path | None,
    ) -> Catalog:
        """Load the three folders (a missing one is empty); broken files are kept aside."""
        agents, scenes, sops = (
            Path(d) if d is not None else None for d in (agents_dir, scenarios_dir, sop_dir)
        )
        cards = load_by_id(agents, load_card, CardError)
        found = load_by_id(scenes, load_scenario, ScenarioError)
        library = SopLibrary(sops, strict=False)
        return cls(
            employees=cards.items,
            scenarios=found.items,
            sops=library,
            agents_dir=agents,
            scenarios_dir=scenes,
            sop_dir=sops,
            broken_employees=cards.broken,
            broken_scenarios=found.broken,
            problems=[*cards.problems, *found.problems, *library.problems],
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
        return cls._for_root(project_root(Path(path)), fallback)

    @classmethod
    def for_card_file(cls, path: str | Path, *, fallback: Catalog) -> Catalog:
        """The catalog an SOP card is checked against: the project its ``sop_library/`` is
        in, else ``fallback`` (as :meth:`for_scenario_file`)."""
        return cls._for_root(card_project(Path(path)), fallback)

    @classmethod
    def _for_root(cls, root: Path, fallback: Catalog) -> Catalog:
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
        own = cls.load(agents, scenes, sops)
        return cls(
            employees=own.employees if agents else fallback.employees,
            scenarios=own.scenarios if scenes else fallback.scenarios,
            sops=own.sops if sops else fallback.sops,
            agents_dir=agents or fallback.agents_dir,
            scenarios_dir=scenes or fallback.scenarios_dir,
            sop_dir=sops or fallback.sop_dir,
            broken_employees=own.broken_employees if agents else fallback.broken_employees,
            broken_scenarios=own.broken_scenarios if scenes else fallback.broken_scenarios,
            problems=own.problems,
        )

    def employee(self, employee_id: str) -> EmployeeCard:
        """The card of ``employee_id``; its file's error if that card does not load, else
        :class:`UnknownNameError` with a suggestion."""
        return _found(
            "employee", employee_id, self.employees, self.broken_employees, self.agents_dir, AGENTS
        )

    def language_of(self, employee_id: str) -> Language | None:
        """The language ``employee_id`` writes in (:attr:`EmployeeCard.writes_in`: its card's,
        else its persona's); None for an id without a card that loads."""
        card = self.employees.get(employee_id)
        return card.writes_in if card is not None else None

    def scenario(self, id_or_path: str | Path) -> Scenario:
        """A scenario by id, or loaded from a path (``.yaml``/``.yml`` or an existing file).

        The file fallback is for the command line, where the person naming the file owns
        it; what takes names from others (the server, the adapters) uses
        :meth:`scenario_by_id`.
        """
        text = str(id_or_path)
        if isinstance(id_or_path, Path) or text.endswith(YAML_SUFFIXES) or Path(text).is_file():
            return load_scenario(id_or_path)
        return _found(
            "scenario", text, self.scenarios, self.broken_scenarios, self.scenarios_dir, SCENARIOS
        )

    def scenario_by_id(self, scenario_id: str) -> Scenario:
        """A scenario of this catalog by its id, and nothing else: never a file.

        What the server and the chat adapters open rooms with. A name that is no id of the
        catalog (a file name, a path) is an :class:`UnknownNameError` listing the ids, with a
        did-you-mean; the file system is never asked, so the answer tells nothing about which
        files exist. An id whose file does not load is refused without quoting that file.
        """
        found = self.scenarios.get(scenario_id)
        if found is not None:
            return found
        names = sorted(self.scenarios)
        broken = self.broken_scenarios.get(scenario_id)
        if broken is not None:
            where = self._in_project(broken.file)
            raise ScenarioError(
                f"scenario '{scenario_id[:80]}' is defined in a file that does not load",
                field="scenario",
                fix=f"fix {where} (staffroom validate {where} says what is wrong); "
                f"scenarios that load: {', '.join(names) or '(none)'}",
            )
        raise UnknownNameError(
            f"unknown scenario '{scenario_id[:80]}'{hint(scenario_id[:200], names)}",
            field="scenario",
            fix=f"use a scenario id of the project: {', '.join(names) or '(none yet)'} "
            f"(each is the id: of a file in {SCENARIOS}/)",
        )

    def resumed_scenario(
        self, session: str, entry: EntryPayload, *, project: Path, from_file: bool = False
    ) -> Scenario:
        """The scenario a stored room resumes on: the id its entry event records
        (``entry``: that event's payload), looked up by :meth:`scenario_by_id`.

        Never a path by default, so a scenario file that moved, or a file placed where it
        was, changes nothing. ``from_file`` (the command line only): when the id is not in
        the catalog, load the file the entry names (``scenario_source``, relative to
        ``project`` or absolute), if it still holds that scenario.
        """
        scenario_id, source = entry.scenario or "", entry.scenario_source
        try:
            return self.scenario_by_id(scenario_id)
        except UnknownNameError:
            if not from_file or not isinstance(source, str) or not source.endswith(YAML_SUFFIXES):
                names = ", ".join(sorted(self.scenarios)) or "none"
                raise UnknownNameError(
                    f"{session} runs scenario '{scenario_id[:80]}', which is not a scenario "
                    f"of this project (it has: {names})",
                    field="scenario",
                    fix=f"put the scenario's file back in {SCENARIOS}/, or go on from the "
                    "command line: staffroom run <its file> --room <room id>",
                ) from None
        path = Path(source) if Path(source).is_absolute() else project / source
        if not path.is_file():
            raise UnknownNameError(
                f"{session} runs scenario '{scenario_id[:80]}', which is neither in this "
                f"project nor in {path} any more",
                field="scenario",
                fix="run it with its file again: staffroom run <its file> --room <room id>",
            )
        found = load_scenario(path)
        if found.id != scenario_id:
            raise ScenarioError(
                f"{session} runs scenario '{scenario_id[:80]}', but {path} now holds "
                f"scenario '{found.id}'",
                field="scenario",
                fix="run it with the file that holds its scenario: staffroom run <file> "
                "--room <room id>",
            )
        return found

    def _in_project(self, file: str | None) -> str:
        """``file`` relative to the project (the folder holding ``scenarios/``), so an error
        shown to others names no folder outside it."""
        if file is None or self.scenarios_dir is None:
            return f"{SCENARIOS}/"
        try:
            return Path(file).relative_to(self.scenarios_dir.parent).as_posix()
        except ValueError:
            return f"{SCENARIOS}/{Path(file).name}"

    def check_scenario(
        self, scenario: Scenario, stored: Mapping[str, StoredSop] | None = None
    ) -> None:
        """Raise the first cross-check problem of ``scenario`` (see :meth:`scenario_problems`)."""
        problems = self.scenario_problems(scenario, stored)
        if problems:
            raise problems[0]

    def scenario_problems(
        self, scenario: Scenario, stored: Mapping[str, StoredSop] | None = None
    ) -> list[InputError]:
        """Every cross-check problem: unknown participants, unknown SOPs, stray SOP speakers,
        a sop template that does not render within the sandbox's limits. ``stored``: the
        SOP store's best versions (an SOP published only there is known)."""
        return scenario_problems(self, scenario, stored)

    def resolve_speaker(self, scenario: Scenario, speaker: str) -> str:
        """The employee id an SOP step's ``speaker`` means in ``scenario``.

        An id wins over a role; when several participants share a role, the first listed
        speaks. :class:`UnknownNameError` if no participant matches.
        """
        return resolve_speaker(self, scenario, speaker)


def _found(
    kind: str,
    name: str,
    known: Mapping[str, _T],
    broken: Mapping[str, InputError],
    folder: Path | None,
    default: str,
) -> _T:
    """``known[name]``; else the error of the file meant to define it, else
    :class:`UnknownNameError` with a suggestion."""
    found = known.get(name)
    if found is not None:
        return found
    error = broken.get(name)
    if error is not None:
        raise error.with_traceback(None)  # the stored error, without old frames
    names = sorted(known)
    # The id may be defined in a file that does not load: say which files those are.
    files = sorted({str(bad.file) for bad in broken.values() if bad.file})
    note = f"; these files do not load: {', '.join(files)} (see staffroom validate)"
    raise UnknownNameError(
        f"unknown {kind} '{name[:80]}'{hint(name[:200], names)}",
        field=kind,
        fix=f"known {kind}s: {', '.join(names) or '(none)'}; files live in {folder or default}/"
        + (note if files else ""),
    )


__all__ = ["Catalog", "project_root"]
