"""Prompts: the packaged template, a card's own template, and a broken one caught up front."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from backend import backend_database
from paths import ROOT

from framework import Settings, Staffroom
from framework.errors import PromptTemplateError
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec


def project_copy(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    for name in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / name, project / name)
    return project


async def test_prompt_holds_persona_announcement_step_and_only_recent_messages(
    tmp_path: Path,
) -> None:
    model = ScriptedChatModel(replies=[f"reply {i}" for i in range(30)])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    settings = Settings(
        data_dir=tmp_path / "d", project_dir=ROOT, allow_network=False, database=backend_database()
    )
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        dm = await staff.dm("pm", "alice")
        for i in range(20):
            async for _ in dm.post(f"message number {i}", author="alice"):
                pass
    last_call = model.calls[-1]
    system = str(last_call[0].content)
    assert "产品经理小P" in system and "合规自检" in system  # display name and persona
    window = 12  # ScenarioSettings.recent_turns default
    assert len(last_call) == 1 + window
    assert "message number 19" in str(last_call[-1].content)
    assert all("message number 3" not in str(m.content) for m in last_call[1:])
    # Older turns reach the prompt only as consolidated HISTORY.md lines.
    assert "## 历史摘要" in system and "alice: message number 0" in system


async def test_card_template_overrides_and_a_broken_one_fails_before_running(
    tmp_path: Path,
) -> None:
    project = project_copy(tmp_path)
    card = project / "agents" / "pm.yaml"
    (project / "agents" / "pm.j2").write_text("I am {{ card.display_name }}. {{ no_such_var }}")
    card.write_text(card.read_text(encoding="utf-8") + "prompt_template: pm.j2\n", encoding="utf-8")
    settings = Settings(
        data_dir=tmp_path / "d",
        project_dir=project,
        allow_network=False,
        database=backend_database(),
    )
    async with await Staffroom.open(settings=settings) as staff:
        with pytest.raises(PromptTemplateError, match="no_such_var"):
            await staff.room("r", "tech-article")
        assert not (tmp_path / "d" / "sessions" / "room:r.jsonl").exists()
