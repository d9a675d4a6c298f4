"""The self-check gate re-scans an implausible first pass, and records what it changed.

The seed's experiment: one pass over a two-page retrospective found 1 item in 1 category;
with the gate, 8 items in 4 categories. Here a scripted model answers thin, then complete.
"""

from __future__ import annotations

import json

from framework.knowledge.extractors import RULES, model_extractor, rules_extractor
from framework.knowledge.gate import ExtractionInput, expected_band, extract, gate_reasons
from framework.knowledge.items import Item, categories_of, dedupe
from framework.models import ScriptedChatModel
from framework.models.profile import ModelProfile
from framework.prompts.environment import PromptRenderer

PROFILE = ModelProfile(label="scripted", structured="prompt")

RETRO = (
    "# 发布复盘 2026-11-28\n"
    + "这次灰度发布持续了三天，回滚一次。事故的直接原因是配置中心推送了旧版本的限流配置，"
    "导致网关在高峰期拒绝了约百分之三的请求。值班同学在二十分钟后发现告警，处理过程顺利。"
    * 12
    + "\n大家讨论了以后如何避免这种情况，也聊了下季度的计划。\n"
)
THIN = {"items": [{"category": "knowledge", "text": "限流配置推送了旧版本导致网关拒绝请求"}]}
COMPLETE = {
    "items": [
        {"category": "knowledge", "text": "限流配置推送了旧版本导致网关拒绝请求", "topic": "发布"},
        {"category": "knowledge", "text": "告警二十分钟后才被发现", "topic": "监控"},
        {"category": "decision", "text": "发布前核对配置中心的版本号", "topic": "发布"},
        {"category": "decision", "text": "灰度期间限流配置冻结", "topic": "发布"},
        {"category": "task", "text": "给配置推送加版本校验", "for_whom": "engineer"},
        {"category": "task", "text": "把告警阈值调到五分钟", "for_whom": "engineer"},
        {"category": "improvement", "text": "复盘模板加入配置变更一栏"},
        {"category": "task", "text": "整理下季度发布计划"},
    ]
}


def scripted(*answers: dict[str, object]) -> ScriptedChatModel:
    return ScriptedChatModel(replies=[json.dumps(a, ensure_ascii=False) for a in answers])


async def test_thin_first_answer_without_the_gate_stays_thin() -> None:
    model = scripted(THIN, COMPLETE)
    extractor = model_extractor(model, PromptRenderer(), PROFILE)
    run = await extract(ExtractionInput("pm", "room:retro", RETRO), extractor, gate=False)
    assert len(run.items) == 1 and categories_of(run.items) == ["knowledge"]
    assert not run.gate.fired and len(model.calls) == 1


async def test_the_gate_rescans_and_records_what_changed() -> None:
    model = scripted(THIN, COMPLETE)
    extractor = model_extractor(model, PromptRenderer(), PROFILE)
    run = await extract(ExtractionInput("pm", "room:retro", RETRO), extractor)
    assert len(run.items) == 8
    assert categories_of(run.items) == ["task", "improvement", "knowledge", "decision"]
    gate = run.gate
    assert gate.fired and "a retrospective gave no decision" in gate.reasons
    assert "only one category was found (knowledge)" in gate.reasons
    assert gate.before == {"knowledge": 1}
    assert gate.after == {"task": 3, "improvement": 1, "knowledge": 2, "decision": 2}
    assert len(gate.added) == 7 and gate.dropped == [] and gate.still == []
    # The re-scan was told why and what the first pass found.
    rescan_prompt = str(model.calls[1][0].content)
    assert "a retrospective gave no decision" in rescan_prompt
    assert "限流配置推送了旧版本" in rescan_prompt
    assert run.by == ["scripted", "scripted"] and run.fallbacks == []


async def test_too_many_items_rescan_replaces_them() -> None:
    short = "今天和 alice 对了一下发布时间，定在周五。"
    many = {"items": [{"category": "task", "text": f"第{i}件事"} for i in range(12)]}
    merged = {"items": [{"category": "decision", "text": "发布定在周五"}]}
    extractor = model_extractor(scripted(many, merged), PromptRenderer(), PROFILE)
    run = await extract(ExtractionInput("pm", "dm:alice@pm", short), extractor)
    assert run.gate.fired and any("more than" in r for r in run.gate.reasons)
    assert [i.text for i in run.items] == ["发布定在周五"]
    assert len(run.gate.dropped) == 12


async def test_an_unusable_answer_falls_back_to_the_rules_and_says_so() -> None:
    text = "决定：周五发布\nTODO: 更新发布说明 @engineer\n"
    extractor = model_extractor(scripted({"nope": 1}, {"nope": 2}), PromptRenderer(), PROFILE)
    run = await extract(ExtractionInput("pm", "dm:alice@pm", text), extractor, gate=False)
    assert run.by == [RULES] and run.fallbacks and "unusable" in run.fallbacks[0]
    assert run.items == [
        Item("decision", "周五发布"),
        Item("task", "更新发布说明 @engineer", for_whom="engineer"),
    ]


async def test_rules_rescan_reads_keywords_when_marked_lines_are_too_few() -> None:
    journal = (
        "- note: 和 alice 讨论了发布。\n"
        "- observation: 发现灰度环境的限流配置和生产不一致，原因是配置中心没有区分环境。\n"
        "- question: 回滚预案谁来负责？\n"
        "我们决定下周一起把配置中心按环境拆开。下次发布前应该先核对配置。"
    ) * 8
    first = await rules_extractor(ExtractionInput("pm", "s", journal), None)
    run = await extract(ExtractionInput("pm", "s", journal), rules_extractor)
    assert categories_of(first.items) == ["question"], "the first pass takes marked lines only"
    assert len(dedupe(first.items)) < len(run.items)
    assert run.gate.fired and {"decision", "improvement"} <= set(categories_of(run.items))
    assert run.by == [RULES, RULES]


def test_the_band_scales_with_length() -> None:
    assert expected_band(2000) == (5, 15)  # the seed's two-page retrospective
    assert expected_band(100) == (1, 4)
    source = ExtractionInput("pm", "s", "短消息")
    assert gate_reasons(source, [Item("task", "a")]) == []
