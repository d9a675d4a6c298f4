"""A broken SOP card stops only the rooms that use its SOP, with the card's own file:line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_in_process import Cli
from paths import ROOT


def project(tmp_path: Path) -> Path:
    proj = tmp_path / "proj"
    for part in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / part, proj / part)
    return proj


def folders(tmp_path: Path) -> dict[str, str]:
    """The data folder and the copied project, as a person would set them once."""
    return {
        "STAFFROOM_HOME": str(tmp_path / "data"),
        "STAFFROOM_PROJECT": str(tmp_path / "proj"),
    }


@pytest.mark.parametrize("damage", ["unparseable", "edited_in_place"])
def test_a_broken_card_stops_only_its_users(cli: Cli, tmp_path: Path, damage: str) -> None:
    proj = project(tmp_path)
    card = proj / "sop_library" / "tech_article" / "v1.md"
    if damage == "edited_in_place":
        assert cli("sop", "list", env=folders(tmp_path)).code == 0  # v1 is now stored
        card.write_text(card.read_text("utf-8").replace("立题与提纲", "立题"), encoding="utf-8")
    else:
        v2 = card.with_name("v2.md")
        v2.write_text(
            "---\nid: tech-article\nversion: 2\nsteps: [unclosed\n---\n", encoding="utf-8"
        )
        card = v2

    dm = cli("dm", "pm", "--user", "alice", stdin="你好\n", env=folders(tmp_path))
    assert dm.code == 0, dm.err
    assert "产品经理小P" in dm.out

    ran = cli("run", "tech-article", "--room", "r1", env=folders(tmp_path))
    assert ran.code == 2 and "Traceback" not in ran.err
    assert f"{card.name}:" in ran.err, ran.err  # the card's own file:line
    assert not (tmp_path / "data" / "sessions" / "room:r1.jsonl").exists()

    user = ROOT / "tests" / "fixtures" / "user_scenario" / "scenarios" / "launch_review.yaml"
    other = cli("run", str(user), "--room", "lr", env=folders(tmp_path))
    assert other.code == 0, other.err
