"""`staffroom validate` agrees with `run`: the SOP store is the source of truth, and a
project's knowledge.yaml is checked with the other files."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from backend import backend_database
from cli_in_process import Cli
from paths import ROOT

from framework.settings import Settings
from framework.sop.model import SopVersion, Status, Step
from framework.staffroom import Staffroom

SCENARIO = """\
id: store-only-room
title: store only
participants: [pm, engineer]
humans: [author]
announcement:
  text: 目标：试一下
  sop: "{{ best_sop('store-only') }}"
"""


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    for folder in ("agents", "sop_library"):
        shutil.copytree(ROOT / folder, project / folder)
    (project / "scenarios").mkdir()
    (project / "scenarios" / "store_only.yaml").write_text(SCENARIO, encoding="utf-8")
    return project


def test_a_store_only_sop_is_known_to_validate(cli: Cli, tmp_path: Path) -> None:
    project, data = _project(tmp_path), tmp_path / "data"
    before = cli("validate", "scenarios", "--data-dir", str(data), cwd=project)
    assert before.code == 1 and "unknown SOP 'store-only'" in before.out

    async def publish() -> None:
        # The store the CLI uses: the SQLite file, or the database on the postgres backend.
        settings = Settings(data_dir=data, project_dir=project, database=backend_database())
        async with await Staffroom.open(settings=settings) as staff:
            step = Step(speakers=("engineer",), do="engineer 做第 1 步")
            version = SopVersion("store-only", 1, "试一下", "global", (step,), Status.PUBLISHED)
            await staff.sops.store.add_version(version)

    asyncio.run(publish())
    after = cli("validate", "scenarios", "--data-dir", str(data), cwd=project)
    assert after.code == 0, after.out


def test_a_broken_knowledge_file_is_reported_with_its_line(cli: Cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "knowledge.yaml").write_text(
        "categories: [learning]\nloadng:\n  writing: [style]\n", encoding="utf-8"
    )
    done = cli("validate", "agents", "--data-dir", str(tmp_path / "d"), cwd=project)
    assert done.code == 1
    assert "knowledge.yaml:2" in done.out and "loadng" in done.out
    assert "Traceback" not in done.out + done.err


def _sample(tmp_path: Path) -> Path:
    """A copy of the sample project (agents, scenarios, SOP cards) to break."""
    project = tmp_path / "sample"
    for folder in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / folder, project / folder)
    return project


def _break_it(project: Path, how: str) -> None:
    card = project / "sop_library" / "tech_article" / "v1.md"
    if how == "second card, same id":
        pm = (project / "agents" / "pm.yaml").read_text(encoding="utf-8")
        (project / "agents" / "pm_copy.yaml").write_text(pm, encoding="utf-8")
    elif how == "version 5 after 1":
        text = card.read_text(encoding="utf-8").replace("version: 1", "version: 5")
        (card.parent / "v5.md").write_text(text, encoding="utf-8")
    else:  # v1 edited in place, after a run stored it
        text = card.read_text(encoding="utf-8")
        card.write_text(text.replace("goal: ", "goal: 改过的 "), encoding="utf-8")


# Each: what run refuses, and the paths validate is asked about (each must find it).
REFUSED = {
    "second card, same id": (
        "agents/pm_copy.yaml:1 id: id 'pm' is used twice",
        [["agents"], ["agents/pm.yaml"], ["agents/pm_copy.yaml"], ["scenarios"]],
    ),
    "version 5 after 1": (
        "sop_library/tech_article/v5.md:3 version: SOP tech-article@5 skips a number",
        [["sop_library"], ["sop_library/tech_article/v5.md"], ["scenarios"], ["."]],
    ),
    "v1 edited in place": (
        "sop_library/tech_article/v1.md:3 version: SOP tech-article@1 is already stored "
        "with different content",
        [["sop_library"], ["sop_library/tech_article/v1.md"], ["scenarios"]],
    ),
}


@pytest.mark.parametrize("how", sorted(REFUSED))
def test_validate_finds_what_run_refuses(tmp_path: Path, cli: Cli, how: str) -> None:
    project, data = _sample(tmp_path), tmp_path / "data"
    folder = ["--data-dir", str(data)]
    assert cli("run", "tech-article", "--room", "first", *folder, cwd=project).code == 0
    _break_it(project, how)
    problem, asked = REFUSED[how]

    ran = cli("run", "tech-article", "--room", "second", *folder, cwd=project)
    assert ran.code == 2 and ran.err.startswith(f"error: {problem}"), ran.err
    for paths in asked:
        checked = cli("validate", *paths, *folder, cwd=project)
        assert checked.code == 1, (paths, checked.out)
        assert f"✗ {problem}" in checked.out, (paths, checked.out)
        assert "Traceback" not in checked.out + checked.err
    if how != "second card, same id":  # what uses no part of that SOP is still valid
        assert cli("validate", "agents", *folder, cwd=project).code == 0
