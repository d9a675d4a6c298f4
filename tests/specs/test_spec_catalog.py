"""Catalog lookups, cross-checks and speaker resolution, on small projects made per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import CardError, ScenarioError, UnknownNameError
from framework.specs import Catalog, SopLibrary


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def _card(eid: str, role: str) -> str:
    return f"id: {eid}\ndisplay_name: {eid}\nrole: {role}\npersona: 你是{eid}。\n"


def _sop(version: int, speakers: str, status: str = "published") -> str:
    return (
        f"---\nid: flow\nversion: {version}\nscope: global\ngoal: g\nstatus: {status}\n"
        f"steps:\n  - speaker: lead\n    do: a\n  - speaker: {speakers}\n    do: b\n---\n"
    )


SCENARIO = """\
id: room
title: Room
participants: [alice, bob]
announcement:
  text: hi
  sop: "{{ best_sop('flow') }}"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _project(
        tmp_path,
        {
            "agents/alice.yaml": _card("alice", "lead"),
            "agents/bob.yaml": _card("bob", "writer"),
            "agents/carol.yaml": _card("carol", "writer"),
            "scenarios/room.yaml": SCENARIO,
            "sop_library/flow/v1.md": _sop(1, "[bob, writer]"),
        },
    )


def test_load_and_resolve_speakers(project: Path) -> None:
    catalog = Catalog.for_project(project)
    scenario = catalog.scenario("room")
    catalog.check_scenario(scenario)
    assert catalog.resolve_speaker(scenario, "alice") == "alice"
    assert catalog.resolve_speaker(scenario, "lead") == "alice"  # by role
    assert catalog.resolve_speaker(scenario, "writer") == "bob"  # carol is not in the room
    with pytest.raises(UnknownNameError, match="did you mean 'writer'"):
        catalog.resolve_speaker(scenario, "writter")


def test_missing_folders_are_empty(tmp_path: Path) -> None:
    catalog = Catalog.load(tmp_path / "a", None, tmp_path / "c")
    assert catalog.employees == {} and catalog.scenarios == {} and len(catalog.sops) == 0


def test_unknown_names_suggest_and_list(project: Path) -> None:
    catalog = Catalog.for_project(project)
    with pytest.raises(UnknownNameError) as caught:
        catalog.employee("alcie")
    assert "did you mean 'alice'?" in caught.value.message
    assert "alice, bob, carol" in (caught.value.fix or "")
    with pytest.raises(UnknownNameError, match="did you mean 'room'"):
        catalog.scenario("rooom")


def test_each_listed_speaker_must_be_a_participant(project: Path) -> None:
    _project(project, {"sop_library/flow/v2.md": _sop(2, "[bob, editor]")})
    catalog = Catalog.for_project(project)
    with pytest.raises(ScenarioError) as caught:
        catalog.check_scenario(catalog.scenario("room"))
    err = caught.value
    assert err.file == str(project / "sop_library" / "flow" / "v2.md")
    assert (err.field, err.line) == ("steps[1].speaker[1]", 10)
    assert "scenario 'room'" in err.message and "room.yaml" in err.message


def test_only_published_versions_are_checked_and_best(project: Path) -> None:
    _project(project, {"sop_library/flow/v2.md": _sop(2, "[bob, editor]", status="draft")})
    catalog = Catalog.for_project(project)
    catalog.check_scenario(catalog.scenario("room"))
    assert catalog.sops.versions("flow") == [1, 2]
    assert catalog.sops.best("flow").version == 1
    assert catalog.sops.get("flow", 2).status == "draft"
    with pytest.raises(UnknownNameError, match="no version 9"):
        catalog.sops.get("flow", 9)


def test_unknown_or_unpublished_sop_points_at_the_slot(project: Path) -> None:
    _project(project, {"scenarios/room.yaml": SCENARIO.replace("'flow'", "'flwo'")})
    catalog = Catalog.for_project(project)
    with pytest.raises(ScenarioError) as caught:
        catalog.check_scenario(catalog.scenario("room"))
    assert (caught.value.field, caught.value.line) == ("announcement.sop", 6)
    assert "did you mean 'flow'?" in caught.value.message

    _project(
        project,
        {"scenarios/room.yaml": SCENARIO, "sop_library/flow/v1.md": _sop(1, "bob", "deprecated")},
    )
    catalog = Catalog.for_project(project)
    with pytest.raises(ScenarioError, match="no published version"):
        catalog.check_scenario(catalog.scenario(project / "scenarios" / "room.yaml"))


def test_duplicate_employee_ids_name_both_files(project: Path) -> None:
    _project(project, {"agents/zz.yaml": _card("bob", "x")})
    catalog = Catalog.for_project(project)  # loading is tolerant: the error waits for a use
    assert [p.file for p in catalog.problems] == [str(project / "agents" / "zz.yaml")]
    with pytest.raises(CardError) as caught:
        catalog.employee("bob")
    assert caught.value.file == str(project / "agents" / "zz.yaml")
    assert "bob.yaml:1" in caught.value.message


def test_scenario_problems_lists_all(project: Path) -> None:
    text = SCENARIO.replace("[alice, bob]", "[alice, bobb, dave]")
    _project(project, {"scenarios/room.yaml": text})
    catalog = Catalog.for_project(project)
    problems = catalog.scenario_problems(catalog.scenario("room"))
    assert [p.field for p in problems] == [
        "participants[1]",
        "participants[2]",
        "steps[1].speaker[0]",
        "steps[1].speaker[1]",
    ]


def test_library_ignores_readme_and_missing_folder(tmp_path: Path) -> None:
    _project(tmp_path, {"lib/README.md": "# notes\n", "lib/flow/v1.md": _sop(1, "bob")})
    library = SopLibrary(tmp_path / "lib")
    assert library.ids() == ["flow"] and "flow" in library
    assert [c.ref for c in library] == ["flow@1"]
    assert len(SopLibrary(tmp_path / "nope")) == 0
