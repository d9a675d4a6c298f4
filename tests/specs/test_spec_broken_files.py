"""One broken file stops only what uses it; validate reports every problem (issue 8, point 6).

The CLI tests run ``python -m framework`` in a copy of the shipped project, as a user would.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_in_process import Cli, CliResult
from paths import ROOT as REPO

from framework.errors import CardError, ScenarioError, SopCardError, UnknownNameError
from framework.specs import Catalog, SopLibrary, validate_paths

BROKEN_SCENARIO = "id: broken\ntitle: [unclosed\n"
BROKEN_CARD = "id: reviewer\nrole: [unclosed\n"
STRAY_SPEAKER_SOP = """\
---
id: other
version: 1
scope: global
goal: g
steps:
  - speaker: pm
    do: a
  - speaker: [designer, desginer]
    do: b
---
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _scenario(sid: str, old: str = "", new: str = "") -> str:
    text = (REPO / "scenarios" / "tech_article.yaml").read_text(encoding="utf-8")
    return text.replace("id: tech-article", f"id: {sid}", 1).replace(old, new)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "team"
    for folder in ("agents", "sop_library"):
        shutil.copytree(REPO / folder, root / folder)
    _write(root, {"scenarios/tech_article.yaml": _scenario("tech-article")})
    return root


def _no_traceback(*results: CliResult) -> None:
    for result in results:
        assert "Traceback" not in result.out + result.err


def test_validate_reports_every_problem_of_every_file(cli: Cli, project: Path) -> None:
    _write(
        project,
        {
            "scenarios/bomb.yaml": _scenario(
                "bomb", "{{ best_sop('tech-article') }}", "{{ range(10**9)|list }}"
            ),
            "scenarios/blank.yaml": _scenario("blank", '"/stop", ', '"", '),
            "scenarios/turns.yaml": _scenario("turns", "recent_turns: 12", "recent_turns: 1e23"),
            "scenarios/nobody.yaml": _scenario("nobody", "humans: [author]", "humans: []"),
            "sop_library/other/v1.md": STRAY_SPEAKER_SOP,
        },
    )
    done = cli("validate", "scenarios", "sop_library", cwd=project)
    assert done.code == 1, done.out + done.err
    _no_traceback(done)
    out = " ".join(done.out.split())  # rich wraps long lines
    assert "scenarios/bomb.yaml:15 announcement.sop" in out and "100,000 items" in out
    assert "scenarios/blank.yaml:22 settings.stop_words[0]" in out
    assert "scenarios/turns.yaml:20 settings.recent_turns" in out and "1 to 1,000" in out
    assert "scenarios/nobody.yaml:9 humans" in out
    assert "sop_library/other/v1.md:9 steps[1].speaker[1]" in out
    assert (
        "did you mean 'designer'?" in out
        and "designer, engineer, lead, oncall, pm, reviewer, triage" in out
    )
    assert "5 problem(s)" in out


def test_a_template_bomb_stops_run_with_a_clear_error(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    _write(
        project,
        {
            "scenarios/bomb.yaml": _scenario(
                "bomb", "{{ best_sop('tech-article') }}", "{{ range(10**9)|list }}"
            )
        },
    )
    done = cli("run", "bomb", "--data-dir", str(tmp_path / "data"), cwd=project)
    assert done.code == 2
    _no_traceback(done)
    assert "OverflowError" not in done.err
    assert "bomb.yaml:15 announcement.sop" in " ".join(done.err.split())


def test_a_broken_scenario_stops_only_itself(cli: Cli, project: Path, tmp_path: Path) -> None:
    _write(project, {"scenarios/broken.yaml": BROKEN_SCENARIO})
    data = str(tmp_path / "data")
    good = cli("validate", "scenarios/tech_article.yaml", cwd=project)
    other = cli("run", "tech-article", "--room", "r1", "--data-dir", data, cwd=project)
    dm = cli("dm", "pm", "--user", "alice", "--data-dir", data, stdin="hi\n", cwd=project)
    itself = cli("run", "broken", "--data-dir", data, cwd=project)
    _no_traceback(good, other, dm, itself)
    assert good.code == 0, good.out
    assert other.code == 0, other.err
    assert "waiting for author" in other.out
    assert dm.code == 0, dm.err
    assert itself.code == 2
    assert "scenarios/broken.yaml:2" in itself.err


def test_a_broken_card_stops_only_its_employee(cli: Cli, project: Path, tmp_path: Path) -> None:
    _write(project, {"agents/reviewer.yaml": BROKEN_CARD})
    data = str(tmp_path / "data")
    pm = cli("dm", "pm", "--user", "alice", "--data-dir", data, stdin="hi\n", cwd=project)
    reviewer = cli(
        "dm", "reviewer", "--user", "alice", "--data-dir", data, stdin="hi\n", cwd=project
    )
    _no_traceback(pm, reviewer)
    assert pm.code == 0, pm.err
    assert reviewer.code == 2 and "agents/reviewer.yaml:2" in reviewer.err


def test_the_catalog_keeps_broken_files_for_when_they_are_used(project: Path) -> None:
    _write(project, {"scenarios/broken.yaml": BROKEN_SCENARIO, "agents/reviewer.yaml": BROKEN_CARD})
    catalog = Catalog.for_project(project)
    assert sorted(Path(str(p.file)).name for p in catalog.problems) == [
        "broken.yaml",
        "reviewer.yaml",
    ]
    assert catalog.scenario("tech-article").id == "tech-article"
    with pytest.raises(ScenarioError) as caught:
        catalog.scenario("broken")
    assert caught.value.line == 2
    with pytest.raises(CardError):
        catalog.employee("reviewer")
    with pytest.raises(UnknownNameError) as unknown:
        catalog.scenario("nope")
    assert "broken.yaml" in (unknown.value.fix or "")  # says which file may be the one


def test_a_scenario_using_a_broken_card_reports_the_card(project: Path) -> None:
    _write(
        project,
        {
            "agents/reviewer.yaml": BROKEN_CARD,
            "scenarios/review.yaml": _scenario(
                "review", "participants: [pm, engineer, designer]", "participants: [pm, reviewer]"
            ),
        },
    )
    problems = validate_paths([project / "scenarios" / "review.yaml"])
    assert any(isinstance(p, CardError) and str(p.file).endswith("reviewer.yaml") for p in problems)


def test_a_tolerant_library_raises_a_broken_card_when_its_sop_is_used(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "lib/flow/v1.md": STRAY_SPEAKER_SOP.replace("id: other", "id: flow"),
            "lib/flow/v2.md": "---\nid: flow\nversion: 2\n",  # never closed
            "lib/ok/v1.md": STRAY_SPEAKER_SOP.replace("id: other", "id: ok"),
        },
    )
    with pytest.raises(SopCardError):
        SopLibrary(tmp_path / "lib")  # strict by default, as the importer expects
    library = SopLibrary(tmp_path / "lib", strict=False)
    assert [Path(str(p.file)).name for p in library.problems] == ["v2.md"]
    assert library.best("ok").id == "ok"
    with pytest.raises(SopCardError, match="never closed"):
        library.best("flow")  # v2 may be the best version: it must be fixed first
