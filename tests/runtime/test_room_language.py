"""Which language a room writes in: the English sample is English end to end, the Chinese one
stays Chinese, and a scenario's `language` wins for the room's shared text."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from backend import backend_database
from langchain_core.messages import BaseMessage
from paths import ROOT

from framework import EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.models.brief import find_brief
from framework.specs.model_spec import ModelSpec

HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def turn_prompts(calls: list[list[BaseMessage]]) -> list[str]:
    """The system prompts of employees' turns (not the remark reader's or extraction's)."""
    return [str(c[0].content) for c in calls if find_brief(c).get("purpose") == "turn"]


async def run_room(project: Path, data: Path, scenario: str, reply: str) -> list[str]:
    model = ScriptedChatModel(replies=["Noted."] * 40)

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel:
        return model

    settings = Settings(
        data_dir=data, project_dir=project, allow_network=False, database=backend_database()
    )
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("r1", scenario)
        events = [e async for e in room.start()]
        while events[-1].kind == EventKind.WAIT:
            events += [
                e async for e in room.post(reply, author=events[-1].content["waiting_for"][0])
            ]
    return turn_prompts(model.calls)


async def test_the_english_sample_prompts_every_turn_in_english(tmp_path: Path) -> None:
    prompts = await run_room(ROOT, tmp_path / "d", "escalation", "Looks good, continue.")
    assert len(prompts) >= 5  # four steps, the third one two lanes
    for prompt in prompts:
        assert not HAN.findall(prompt), prompt
    assert prompts[0].startswith("You are Tess (triage) (@triage), the team's triage.")
    assert "SOP step 1: Triage the ticket (what fails" in prompts[0]
    assert "2. oncall: Diagnose" in prompts[0]  # the SOP list in the announcement
    assert "(tools: read_file, write_file; waits for human input;" in prompts[0]


async def test_the_chinese_sample_keeps_its_chinese_prompts(tmp_path: Path) -> None:
    prompts = await run_room(ROOT, tmp_path / "d", "tech-article", "方向没问题，继续。")
    assert prompts[0].startswith("你是产品经理小P（@pm，角色：pm）")
    assert "SOP 第 1 步：立题与提纲" in prompts[0]
    assert "（工具：write_file；兜底：" in prompts[0]


def english_scenario_over_chinese_cards(tmp_path: Path, card_language: str | None) -> Path:
    project = tmp_path / "project"
    for name in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / name, project / name)
    for card in (project / "agents").glob("*.yaml"):
        text = card.read_text(encoding="utf-8").replace("language: zh\n", "")
        if card_language:
            text += f"language: {card_language}\n"
        card.write_text(text, encoding="utf-8")
    scenario = project / "scenarios" / "tech_article.yaml"
    text = scenario.read_text(encoding="utf-8").replace(
        "humans: [author]", "language: en\nhumans: [author]"
    )
    scenario.write_text(text, encoding="utf-8")
    return project


async def test_a_scenario_language_wins_for_shared_text_and_unstated_cards(
    tmp_path: Path,
) -> None:
    project = english_scenario_over_chinese_cards(tmp_path, None)
    prompts = await run_room(project, tmp_path / "d", "tech-article", "继续")
    # Cards that state nothing take the scenario's language for their frame too.
    assert prompts[0].startswith("You are 产品经理小P (@pm), the team's pm.")
    assert "SOP tech-article@1: " in prompts[0] and "(tools: write_file; fallback: " in prompts[0]


async def test_a_card_that_states_its_language_keeps_it_under_another_scenario(
    tmp_path: Path,
) -> None:
    project = english_scenario_over_chinese_cards(tmp_path, "zh")
    prompts = await run_room(project, tmp_path / "d", "tech-article", "继续")
    assert prompts[0].startswith("你是产品经理小P")
    # The SOP list is the room's shared text: in the scenario's language.
    assert "SOP tech-article@1: " in prompts[0] and "(tools: write_file; fallback: " in prompts[0]


async def test_the_knowledge_blocks_are_titled_in_the_prompts_language(tmp_path: Path) -> None:
    model = ScriptedChatModel(replies=["Noted."] * 4)

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel:
        return model

    settings = Settings(
        data_dir=tmp_path / "d", project_dir=ROOT, allow_network=False, database=backend_database()
    )
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        staff.knowledge.trackers.add_task("lead", "Send Acme the incident report")
        staff.knowledge.trackers.add_task("pm", "给 alice 回复发布时间")
        for employee, user in (("lead", "maria"), ("pm", "alice")):
            dm = await staff.dm(employee, user)
            async for _ in dm.post("Status?", author=user):
                pass
    english, chinese = turn_prompts(model.calls)
    assert "## Open tasks, goals, proposals\n- [medium] Send Acme the incident report" in english
    assert not HAN.findall(english), english
    assert "## 未完成的事项\n- [medium] 给 alice 回复发布时间" in chinese
