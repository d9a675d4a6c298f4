"""Compile a scenario into a room plan, validating everything before any model is called.

The plan holds the participants' cards, the rendered announcement (its ``sop`` slot filled
with the best SOP version) and the SOP's steps resolved to employee ids. A plan is plain data;
the room stores a snapshot of its steps in the checkpoint so a resumed room keeps the SOP
version it started with even if the library changes meanwhile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from framework.errors import PromptTemplateError, ScenarioError
from framework.language import room_language
from framework.phrases import Language
from framework.prompts.sandbox import render_string
from framework.sop.model import SopVersion
from framework.specs.catalog import Catalog
from framework.specs.employee import EmployeeCard
from framework.specs.scenario import Scenario, ScenarioSettings
from framework.specs.sop_text import render_steps
from framework.specs.step import Step, StepState, step_state


@dataclass(frozen=True, slots=True)
class RoomPlan:
    """Everything a room needs to run, checked up front."""

    scenario: Scenario
    employees: dict[str, EmployeeCard]
    announcement: str
    sop: SopVersion | None
    steps: tuple[Step, ...]
    """The SOP's steps, their speakers resolved to employee ids (numbered from 1 in order)."""
    sop_trials: dict[str, dict[str, str | float]] = field(default_factory=dict)
    """SOP id -> the trial this room took part in at entry: ``arm`` (``trial`` or ``best``),
    ``trial`` and ``best`` refs, ``share`` (see :mod:`framework.sop.trials`); empty when none."""

    @property
    def settings(self) -> ScenarioSettings:
        """The room's scenario settings (turn caps, stop words, memory window, SOP policy)."""
        return self.scenario.settings

    @property
    def language(self) -> Language:
        """The language of the room's shared text (see :func:`room_language`)."""
        return _language(self.scenario, self.employees)

    def prompt_language(self, employee: str) -> Language:
        """The language of ``employee``'s prompts: its card's, else the room's."""
        return self.employees[employee].language or self.language

    @property
    def humans(self) -> list[str]:
        """The people of the room (a DM: its user)."""
        return list(self.scenario.humans)

    @property
    def participants(self) -> list[str]:
        """The employees of the room, in the scenario's order."""
        return list(self.scenario.participants)

    @property
    def sop_ref(self) -> str | None:
        """``id@version`` of the SOP driving the room, if any."""
        return self.sop.ref if self.sop else None

    def step_states(self) -> list[StepState]:
        """The steps as the room stores them at entry (checkpoint and entry event)."""
        return [step_state(number, step) for number, step in enumerate(self.steps, start=1)]


def compile_plan(
    scenario: Scenario,
    catalog: Catalog,
    versions: Mapping[str, SopVersion],
    *,
    recommended: str = "",
) -> RoomPlan:
    """Fill the announcement's SOP slot of a cross-checked ``scenario`` from ``versions``.

    The caller runs ``catalog.check_scenario`` first (before it looks the versions up, so a
    bad reference is reported against the scenario file). ``versions`` maps each SOP id the
    slot names to the version chosen for this room (the best published one).
    """
    employees = {eid: catalog.employee(eid) for eid in scenario.participants}
    chosen: list[SopVersion] = []

    def best_sop(sop_id: str) -> str:
        version = versions[sop_id]
        chosen.append(version)
        language = _language(scenario, employees)
        return render_steps(version.ref, version.goal, version.steps, language)

    text = scenario.announcement.text
    if scenario.announcement.sop:
        try:
            # The same bounded sandbox validate used: a spec file's template is untrusted.
            slot = render_string(
                scenario.announcement.sop, {"best_sop": best_sop}, label="announcement.sop"
            )
        except PromptTemplateError as exc:
            raise ScenarioError(
                f"the announcement's sop slot does not render: {exc}",
                file=scenario.source,
                field="announcement.sop",
                fix="write e.g. \"{{ best_sop('tech-article') }}\" with an existing SOP id",
            ) from exc
        text = f"{text}\n\n{slot}".strip()
    if recommended:
        text = f"{text}\n\n{recommended}".strip()
    # The first SOP the slot names drives the room; others are only shown.
    sop = chosen[0] if chosen else None
    steps = _resolve_steps(scenario, sop, catalog) if sop else ()
    return RoomPlan(scenario, employees, text, sop, steps)


def _language(scenario: Scenario, employees: Mapping[str, EmployeeCard]) -> Language:
    cards = [card.writes_in for card in employees.values()]
    return room_language(scenario.language, cards, scenario.announcement.text)


def _resolve_steps(scenario: Scenario, sop: SopVersion, catalog: Catalog) -> tuple[Step, ...]:
    def resolved(step: Step) -> Step:
        speakers = tuple(catalog.resolve_speaker(scenario, name) for name in step.speakers)
        return replace(step, speakers=speakers)

    return tuple(resolved(step) for step in sop.steps)
