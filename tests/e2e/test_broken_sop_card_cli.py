"""A broken SOP card stops only the rooms that use its SOP, with the card's own file:line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    for part in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / part, proj / part)
    return proj


def staffroom(
    tmp_path: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "STAFFROOM_HOME": str(tmp_path / "data"),
        "STAFFROOM_PROJECT": str(tmp_path / "proj"),
    }
    return subprocess.run(
        [sys.executable, "-m", "framework", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("damage", ["unparseable", "edited_in_place"])
def test_a_broken_card_stops_only_its_users(tmp_path: Path, damage: str) -> None:
    proj = project(tmp_path)
    card = proj / "sop_library" / "tech_article" / "v1.md"
    if damage == "edited_in_place":
        assert staffroom(tmp_path, "sop", "list").returncode == 0  # v1 is now stored
        card.write_text(card.read_text("utf-8").replace("立题与提纲", "立题"), encoding="utf-8")
    else:
        v2 = card.with_name("v2.md")
        v2.write_text(
            "---\nid: tech-article\nversion: 2\nsteps: [unclosed\n---\n", encoding="utf-8"
        )
        card = v2

    dm = staffroom(tmp_path, "dm", "pm", "--user", "alice", stdin="你好\n")
    assert dm.returncode == 0, dm.stderr
    assert "产品经理小P" in dm.stdout

    ran = staffroom(tmp_path, "run", "tech-article", "--room", "r1")
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert f"{card.name}:" in ran.stderr, ran.stderr  # the card's own file:line
    assert not (tmp_path / "data" / "sessions" / "room:r1.jsonl").exists()

    user = ROOT / "tests" / "fixtures" / "user_scenario" / "scenarios" / "launch_review.yaml"
    other = staffroom(tmp_path, "run", str(user), "--room", "lr")
    assert other.returncode == 0, other.stderr
