"""`staffroom validate` agrees with `run`: the SOP store is the source of truth, and a
project's knowledge.yaml is checked with the other files."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

from framework.sop.model import SopVersion, Status, Step
from framework.staffroom import Staffroom

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = """\
id: store-only-room
title: store only
participants: [pm, engineer]
humans: [author]
announcement:
  text: 目标：试一下
  sop: "{{ best_sop('store-only') }}"
"""


def staffroom(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "framework", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    for folder in ("agents", "sop_library"):
        shutil.copytree(ROOT / folder, project / folder)
    (project / "scenarios").mkdir()
    (project / "scenarios" / "store_only.yaml").write_text(SCENARIO, encoding="utf-8")
    return project


def test_a_store_only_sop_is_known_to_validate(tmp_path: Path) -> None:
    project, data = _project(tmp_path), tmp_path / "data"
    before = staffroom("validate", "scenarios", "--data-dir", str(data), cwd=project)
    assert before.returncode == 1 and "unknown SOP 'store-only'" in before.stdout

    async def publish() -> None:
        async with await Staffroom.open(data, project_dir=project) as staff:
            step = Step(speakers=("engineer",), do="engineer 做第 1 步")
            version = SopVersion("store-only", 1, "试一下", "global", (step,), Status.PUBLISHED)
            await staff.sops.store.add_version(version)

    asyncio.run(publish())
    after = staffroom("validate", "scenarios", "--data-dir", str(data), cwd=project)
    assert after.returncode == 0, after.stdout


def test_a_broken_knowledge_file_is_reported_with_its_line(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / "knowledge.yaml").write_text(
        "categories: [learning]\nloadng:\n  writing: [style]\n", encoding="utf-8"
    )
    done = staffroom("validate", "agents", "--data-dir", str(tmp_path / "d"), cwd=project)
    assert done.returncode == 1
    assert "knowledge.yaml:2" in done.stdout and "loadng" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
