"""Checks that span files: a scenario against its project's employees and SOPs (its sop
template rendered too), an SOP card's speakers against the employees, speaker resolution.

``staffroom validate`` runs them on the files it is given; :meth:`Catalog.check_scenario`
runs them before a room starts, so a problem is reported with its file and line, never mid-run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from framework.errors import (
    InputError,
    PromptTemplateError,
    ScenarioError,
    SopCardError,
    UnknownNameError,
)
from framework.language import room_language
from framework.prompts.sandbox import render_string

from ._explain import hint
from .employee import EmployeeCard
from .limits import MAX_TEXT_CHARS
from .project import AGENTS
from .scenario import Scenario
from .sop_card import SopCard, SopLibrary
from .yaml_loader import field_name

_SOP_FIX = "write e.g. \"{{ best_sop('tech-article') }}\" with an existing SOP id"


class StoredSop(Protocol):
    """An SOP version the store holds (``sop.model.SopVersion`` fits): its ref and steps."""

    @property
    def ref(self) -> str: ...

    @property
    def steps(self) -> Sequence[Any]: ...


class Project(Protocol):
    """What the checks read of a project (:class:`~framework.specs.catalog.Catalog` fits,
    and calls them): its employees, those whose cards do not load, its SOP cards and where
    its cards live."""

    @property
    def employees(self) -> Mapping[str, EmployeeCard]: ...

    @property
    def broken_employees(self) -> Mapping[str, InputError]: ...

    @property
    def sops(self) -> SopLibrary: ...

    @property
    def agents_dir(self) -> Path | None: ...


def scenario_problems(
    catalog: Project, scenario: Scenario, stored: Mapping[str, StoredSop] | None = None
) -> list[InputError]:
    """Every problem of ``scenario`` against ``catalog``: unknown or broken participants,
    unknown or broken SOPs, SOP speakers who are not in the room, a sop template that fails.

    ``stored``: the best version of each SOP the store knows, so an SOP published only in the
    store (an extracted practice, once approved) is known, not an "unknown SOP"."""
    problems: list[InputError] = []
    known = sorted(catalog.employees)
    for index, name in enumerate(scenario.participants):
        if name in catalog.employees:
            continue
        broken = catalog.broken_employees.get(name)
        if broken is not None:
            problems.append(broken)  # the card's own error, with its file and line
            continue
        problems.append(
            ScenarioError(
                f"unknown employee '{name}'{hint(name, known)}",
                file=scenario.source,
                line=scenario.line_of("participants", index),
                field=f"participants[{index}]",
                fix=f"use a known employee ({', '.join(known) or 'none yet'}) "
                f"or add {catalog.agents_dir or AGENTS}/{name}.yaml",
            )
        )
    for sop_id in scenario.referenced_sop_ids():
        version = (stored or {}).get(sop_id)
        if version is not None and not catalog.sops.published(sop_id):
            problems.extend(_stored_sop_problems(catalog, scenario, version))
            continue
        problems.extend(_sop_problems(catalog, scenario, sop_id))
    problems.extend(template_problems(catalog, scenario))
    return problems


def _stored_sop_problems(
    catalog: Project, scenario: Scenario, version: StoredSop
) -> list[InputError]:
    # No card to point at: the scenario's sop line is where the room is told to use it.
    problems: list[InputError] = []
    for n, step in enumerate(version.steps, start=1):
        for name in step.speakers:
            if speaker_ids(catalog, scenario, name):
                continue
            choices = speaker_choices(catalog, scenario)
            problems.append(
                ScenarioError(
                    f"speaker '{name}' of step {n} of SOP {version.ref} (in the SOP store) is "
                    f"not a participant of scenario '{scenario.id}'",
                    file=scenario.source,
                    line=scenario.line_of("announcement", "sop"),
                    field="announcement.sop",
                    fix=f"add the employee to participants, or revise the SOP "
                    f"(staffroom sop show {version.ref}); participants: {', '.join(choices)}",
                )
            )
    return problems


def _sop_problems(catalog: Project, scenario: Scenario, sop_id: str) -> list[InputError]:
    try:
        catalog.sops.best(sop_id)
    except UnknownNameError as exc:
        line = scenario.line_of("announcement", "sop")
        error = ScenarioError(
            exc.message, file=scenario.source, line=line, field="announcement.sop", fix=exc.fix
        )
        return [error]
    except InputError as exc:
        return [exc]  # a card of this SOP does not load: its own file and line say why
    problems: list[InputError] = []
    for card in catalog.sops.published(sop_id):
        for index, step in enumerate(card.steps):
            for j, name in enumerate(step.speakers):
                if speaker_ids(catalog, scenario, name):
                    continue
                path: tuple[str | int, ...] = ("steps", index, "speaker")
                if isinstance(step.speaker, list):
                    path = (*path, j)
                problems.append(_stray_speaker(catalog, scenario, card, path, name))
    return problems


def template_problems(catalog: Project, scenario: Scenario) -> list[InputError]:
    """Render the announcement's sop template as the room will, in the sandbox.

    A template that fails, runs over the sandbox's limits, calls ``best_sop`` with anything but
    a quoted SOP id, or renders to more than ``MAX_TEXT_CHARS`` characters is a problem of the
    scenario file, reported at the ``sop`` line.
    """
    source = scenario.announcement.sop
    if not source:
        return []
    referenced = scenario.referenced_sop_ids()
    cards = [
        catalog.employees[e].writes_in for e in scenario.participants if e in catalog.employees
    ]
    language = room_language(scenario.language, cards, scenario.announcement.text)

    def best_sop(sop_id: object) -> str:
        # The room looks SOPs up before it renders, so only ids written in quotes can work.
        if not isinstance(sop_id, str) or sop_id not in referenced:
            raise PromptTemplateError(
                f"best_sop({str(sop_id)[:80]!r}): the SOP id must be written in quotes"
            )
        try:
            return catalog.sops.best(sop_id).render_text(language)
        except InputError:
            return ""  # reported on its own by _sop_problems

    def error(message: str, fix: str) -> ScenarioError:
        return ScenarioError(
            message,
            file=scenario.source,
            line=scenario.line_of("announcement", "sop"),
            field="announcement.sop",
            fix=fix,
        )

    try:
        text = render_string(source, {"best_sop": best_sop}, label="the sop template")
    except PromptTemplateError as exc:
        return [error(str(exc), _SOP_FIX + "; templates run in a sandbox with limits")]
    if len(text) > MAX_TEXT_CHARS:
        return [
            error(
                f"the sop template renders to {len(text):,} characters; at most "
                f"{MAX_TEXT_CHARS:,} (it is sent in every prompt)",
                "name fewer SOPs in the template, or shorten their steps",
            )
        ]
    return []


def card_speaker_problems(catalog: Project, card: SopCard) -> list[InputError]:
    """Speakers of ``card`` that are neither an employee's id nor a role in ``catalog``.

    Without any employee to compare with (a card checked on its own) there is nothing to say.
    """
    if not catalog.employees and not catalog.broken_employees:
        return []
    cards = sorted(catalog.employees.values(), key=lambda c: c.id)
    roles = {c.role for c in cards}
    choices = [*(c.id for c in cards), *sorted(roles)]
    listing = ", ".join(c.id if c.role == c.id else f"{c.id} (role {c.role})" for c in cards)
    problems: list[InputError] = []
    for index, step in enumerate(card.steps):
        for j, name in enumerate(step.speakers):
            if name in catalog.employees or name in roles:
                continue
            broken = catalog.broken_employees.get(name)
            if broken is not None:
                problems.append(broken)
                continue
            path: tuple[str | int, ...] = ("steps", index, "speaker")
            if isinstance(step.speaker, list):
                path = (*path, j)
            problems.append(
                SopCardError(
                    f"speaker '{name}'{hint(name, choices)} is not an employee's id or role",
                    file=card.source,
                    line=card.line_of(*path),
                    field=field_name(path),
                    fix=f"name a known employee or role: {listing or '(none)'}; or add "
                    f"{catalog.agents_dir or AGENTS}/{name}.yaml",
                )
            )
    return problems


def _stray_speaker(
    catalog: Project, scenario: Scenario, card: SopCard, path: tuple[str | int, ...], name: str
) -> ScenarioError:
    choices = speaker_choices(catalog, scenario)
    # A known employee left out of the room is not a typo: suggesting a participant misleads.
    known = name in catalog.employees or any(c.role == name for c in catalog.employees.values())
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


def resolve_speaker(catalog: Project, scenario: Scenario, speaker: str) -> str:
    """The employee id an SOP step's ``speaker`` means in ``scenario`` (see
    :meth:`Catalog.resolve_speaker`)."""
    matches = speaker_ids(catalog, scenario, speaker)
    if not matches:
        choices = speaker_choices(catalog, scenario)
        raise UnknownNameError(
            f"no participant of scenario '{scenario.id}' is '{speaker}'" + hint(speaker, choices),
            file=scenario.source,
            line=scenario.line_of("participants"),
            field="participants",
            fix=f"name a participant by id or role: {', '.join(choices)}",
        )
    return matches[0]


def speaker_ids(catalog: Project, scenario: Scenario, speaker: str) -> list[str]:
    """Participants ``speaker`` names: itself if it is one, else those with that role."""
    if speaker in scenario.participants:
        return [speaker]
    return [
        pid
        for pid in scenario.participants
        if pid in catalog.employees and catalog.employees[pid].role == speaker
    ]


def speaker_choices(catalog: Project, scenario: Scenario) -> list[str]:
    """What a speaker may say in ``scenario``: participants' ids, then their roles."""
    roles = [catalog.employees[p].role for p in scenario.participants if p in catalog.employees]
    return list(dict.fromkeys([*scenario.participants, *roles]))


__all__ = [
    "Project",
    "card_speaker_problems",
    "resolve_speaker",
    "scenario_problems",
    "speaker_choices",
    "speaker_ids",
    "template_problems",
]
