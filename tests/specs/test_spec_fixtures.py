"""Shipped files load and cross-check clean; each bad fixture fails with file, line, field, fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT as REPO
from spec_paths import BAD, FIXTURES, line_containing

from framework.errors import CardError, InputError, ScenarioError, SopCardError
from framework.specs import (
    BUILTIN_TOOLS,
    Catalog,
    SopLibrary,
    load_card,
    load_scenario,
    load_sop_card,
    validate_paths,
)


def test_shipped_project_loads_and_cross_checks_clean(shipped: Catalog) -> None:
    chinese = ["designer", "engineer", "pm", "reviewer"]
    assert sorted(shipped.employees) == sorted([*chinese, "lead", "oncall", "triage"])
    assert "tech-article" in shipped.scenarios and "escalation" in shipped.scenarios
    for scenario in shipped.scenarios.values():
        shipped.check_scenario(scenario)
    assert (
        validate_paths([REPO / "agents", REPO / "scenarios", REPO / "sop_library"], shipped) == []
    )


def test_shipped_cards(shipped: Catalog) -> None:
    for card in shipped.employees.values():
        assert card.role == card.id
        assert card.model is not None and card.model.label == "simulated"
        assert set(card.tools) <= set(BUILTIN_TOOLS)
        # Each sample's cards are written whole in its language.
        assert card.language == card.writes_in
        assert card.persona.count("。" if card.language == "zh" else ". ") >= 2
    assert shipped.employee("pm").tools == ["write_file"]
    assert shipped.employee("pm").display_name == "产品经理小P"
    assert sorted(shipped.employee("engineer").tools) == sorted(BUILTIN_TOOLS)
    assert sorted(shipped.employee("designer").tools) == sorted(BUILTIN_TOOLS)
    assert shipped.employee("reviewer").tools == ["read_file", "list_files"]


def test_shipped_scenario_and_sop(shipped: Catalog) -> None:
    scenario = shipped.scenario("tech-article")
    assert scenario.participants == ["pm", "engineer", "designer"]
    assert scenario.humans == ["author"]
    assert scenario.settings.max_turns == 30
    assert scenario.referenced_sop_ids() == ["tech-article"]

    sop = shipped.sops.best("tech-article")
    assert (sop.id, sop.version, sop.scope) == ("tech-article", 1, "scenario:tech-article")
    assert sop.goal == "技术分享文章从立题到定稿"
    assert [s.speaker for s in sop.steps] == ["pm", "engineer", "designer", "pm"]
    assert [s.waits_for_input for s in sop.steps] == [False, True, False, False]
    assert sop.change_log[0].version == 1
    assert sop.render_text().splitlines()[1].startswith("1. pm：立题与提纲")
    assert [shipped.resolve_speaker(scenario, s.speakers[0]) for s in sop.steps] == [
        "pm",
        "engineer",
        "designer",
        "pm",
    ]


def _scenario_checked(path: Path) -> None:
    scenario = load_scenario(path)
    Catalog.for_scenario_file(path, fallback=Catalog.for_project(REPO)).check_scenario(scenario)


SOP_FILE = REPO / "sop_library" / "tech_article" / "v1.md"
DUP = BAD / "duplicate_version" / "sop_library"

# (fixture, how to load it, error class, file of the error, needle for the line, field, words)
CASES: list[tuple[str, Callable[[Path], Any], type[InputError], Path, str, str | None, str]] = [
    (
        "yaml_syntax.yaml",
        load_scenario,
        ScenarioError,
        BAD / "yaml_syntax.yaml",
        "participants: [pm, engineer",
        None,
        "YAML syntax error",
    ),
    (
        "missing_field.yaml",
        load_scenario,
        ScenarioError,
        BAD / "missing_field.yaml",
        "id: no-title",
        "title",
        "missing field 'title'",
    ),
    (
        "wrong_type.yaml",
        load_scenario,
        ScenarioError,
        BAD / "wrong_type.yaml",
        "participants: pm",
        "participants",
        "expected a list, got a string",
    ),
    (
        "unknown_employee.yaml",
        _scenario_checked,
        ScenarioError,
        BAD / "unknown_employee.yaml",
        "- desginer",
        "participants[2]",
        "unknown employee 'desginer' (did you mean 'designer'?)",
    ),
    (
        "speaker_not_participant.yaml",
        _scenario_checked,
        ScenarioError,
        SOP_FILE,
        "speaker: designer",
        "steps[2].speaker",
        "scenario 'no-designer'",
    ),
    (
        "unknown_tool.yaml",
        load_card,
        CardError,
        BAD / "unknown_tool.yaml",
        "wirte_file",
        "tools[1]",
        "unknown tool 'wirte_file' (did you mean 'write_file'?)",
    ),
    (
        "unknown_model.yaml",
        load_card,
        CardError,
        BAD / "unknown_model.yaml",
        "model:",
        "model",
        "did you mean 'openai'?",
    ),
    (
        "missing_template.yaml",
        load_card,
        CardError,
        BAD / "missing_template.yaml",
        "prompt_template",
        "prompt_template",
        "not found",
    ),
    (
        "unknown_field.yaml",
        load_scenario,
        ScenarioError,
        BAD / "unknown_field.yaml",
        "partcipants",
        "partcipants",
        "did you mean 'participants'?",
    ),
    (
        "no_front_matter.md",
        load_sop_card,
        SopCardError,
        BAD / "no_front_matter.md",
        "id: tech-article",
        None,
        "no YAML front matter",
    ),
    (
        "sop_yaml_error.md",
        load_sop_card,
        SopCardError,
        BAD / "sop_yaml_error.md",
        "评估: 风险",
        None,
        "YAML syntax error",
    ),
    (
        "duplicate_version/sop_library",
        SopLibrary,
        SopCardError,
        DUP / "demo" / "v2.md",
        "version: 1",
        "version",
        "demo/v1.md:3",
    ),
]


@pytest.mark.parametrize(
    ("name", "load", "error_cls", "file", "needle", "field", "words"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_bad_fixture(
    name: str,
    load: Callable[[Path], Any],
    error_cls: type[InputError],
    file: Path,
    needle: str,
    field: str | None,
    words: str,
) -> None:
    with pytest.raises(error_cls) as caught:
        load(BAD / name)
    err = caught.value
    assert type(err) is error_cls
    assert Path(err.file or "").resolve() == file.resolve()
    assert err.line == line_containing(file, needle)
    assert err.field == field
    assert words in err.message
    assert err.fix and err.fix.strip()
    assert str(err).startswith(f"{err.file}:{err.line}")


def test_every_bad_fixture_is_covered() -> None:
    on_disk = {p.name for p in BAD.iterdir()}
    covered = {case[0].split("/")[0] for case in CASES}
    assert on_disk == covered


def test_validate_paths_collects_every_problem(shipped: Catalog) -> None:
    problems = validate_paths([BAD, BAD / "no_front_matter.md"], shipped)
    by_file = {(Path(p.file or "").name, p.field) for p in problems}
    assert ("yaml_syntax.yaml", None) in by_file
    assert ("missing_field.yaml", "title") in by_file
    assert ("unknown_employee.yaml", "participants[2]") in by_file
    assert ("v1.md", "steps[2].speaker") in by_file  # from speaker_not_participant.yaml
    assert ("unknown_tool.yaml", "tools[1]") in by_file
    assert ("no_front_matter.md", None) in by_file
    assert ("v2.md", "version") in by_file
    assert ("unknown_field.yaml", "partcipants") in by_file  # kind guessed from a near key
    assert all(p.fix for p in problems)
    assert len(problems) == len({str(p) for p in problems})


def test_validate_paths_reports_an_unrecognised_file(tmp_path: Path, shipped: Catalog) -> None:
    (tmp_path / "notes.yaml").write_text("colour: blue\n", encoding="utf-8")
    (tmp_path / "README.md").write_text("# not a card\n", encoding="utf-8")
    problems = validate_paths([tmp_path], shipped)
    assert [p.message for p in problems] == ["cannot tell what this file is"]


def test_user_scenario_loads_and_cross_checks(shipped: Catalog) -> None:
    path = FIXTURES / "user_scenario" / "scenarios" / "launch_review.yaml"
    catalog = Catalog.for_scenario_file(path, fallback=shipped)
    assert catalog.employees is shipped.employees  # no agents/ of its own
    assert catalog.sops.ids() == ["launch-review"]
    scenario = catalog.scenario(path)
    catalog.check_scenario(scenario)
    assert catalog.scenario("launch-review").id == scenario.id
    sop = catalog.sops.best("launch-review")
    assert sop.steps[2].speakers == ["reviewer"] and sop.steps[2].waits_for_input
    assert "3. reviewer: List risks" in sop.render_text(language="en")
    assert validate_paths([FIXTURES / "user_scenario"], shipped) == []
