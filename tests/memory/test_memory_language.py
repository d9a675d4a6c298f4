"""A new MEMORY.md is titled in its employee's language (the card's ``language``, else its
persona's), whatever language the person writes in; an existing file keeps its titles and
``Settings.memory_titles`` wins. The statement rule's fallback is written in the DM's language.

Through a DM on the recording stub (a model that never calls the memory tool, as llama.cpp's
server does): the statement rule writes the file, as it does for a weak real model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from stub_openai import StubOpenAI

from framework import Event, EventKind, Settings, Staffroom
from framework.memory.entries import DEFAULT_TITLES, ENGLISH_TITLES
from framework.memory.memory_tool import RULE_ADDED, RULE_REASON
from framework.specs.model_spec import ModelSpec


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def on_stub(settings: Settings, stub: StubOpenAI, **extra: Any) -> Settings:
    spec = ModelSpec.model_validate(
        {"provider": "openai", "name": "gemma-3-270m", "base_url": stub.base_url}
    )
    return settings.model_copy(update={"model_override": spec, "model_retries": 0, **extra})


def titles(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith("# ")]


async def test_an_english_employee_titles_in_english_for_a_person_writing_chinese(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    # lead's card says `language: en`; wang writes Chinese. The first entry is Chinese, which
    # alone used to make the file Chinese.
    stub_openai.reply("Noted, thanks.")
    async with await Staffroom.open(settings=on_stub(settings, stub_openai)) as staff:
        dm = await staff.dm("lead", "wang")
        events = await collect(dm.post("我叫王芳，负责华东区的客户。", author="wang"))
        text = staff.memory.memory("lead", "wang").path.read_text(encoding="utf-8")
    assert titles(text) == list(ENGLISH_TITLES.values())
    assert "姓名: 王芳" in text  # the person's words stay as they were said
    (fallback,) = [e.content for e in events if e.kind == EventKind.FALLBACK]
    section = ENGLISH_TITLES["identity"]
    assert fallback["used"] == RULE_ADDED("en", section=section, entry="姓名: 王芳")
    assert fallback["reason"] == RULE_REASON("en", person="wang")


async def test_a_chinese_employee_titles_in_chinese_for_a_person_writing_english(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("好的，记下了。")
    async with await Staffroom.open(settings=on_stub(settings, stub_openai)) as staff:
        dm = await staff.dm("pm", "maria")  # pm's card: `language: zh`
        events = await collect(dm.post("My name is Maria Chen.", author="maria"))
        text = staff.memory.memory("pm", "maria").path.read_text(encoding="utf-8")
    assert titles(text) == list(DEFAULT_TITLES.values())
    assert "name: Maria Chen" in text
    (fallback,) = [e.content for e in events if e.kind == EventKind.FALLBACK]
    assert fallback["used"] == "陈述规则写入「用户身份」：name: Maria Chen"
    assert fallback["reason"] == "maria 说了这件事，模型没有调用记忆工具"


async def test_an_existing_file_keeps_its_titles(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("Noted.")
    async with await Staffroom.open(settings=on_stub(settings, stub_openai)) as staff:
        memory = staff.memory.memory("lead", "maria")
        written = "# 用户身份\n§\n# 项目上下文\n项目: 结算\n§\n# 个性化偏好\n§\n# 关键事实\n"
        memory.path.parent.mkdir(parents=True, exist_ok=True)
        memory.path.write_text(written, encoding="utf-8")
        dm = await staff.dm("lead", "maria")
        await collect(dm.post("My name is Maria Chen.", author="maria"))
        text = memory.path.read_text(encoding="utf-8")
    assert titles(text) == list(DEFAULT_TITLES.values())
    assert "name: Maria Chen" in text and "项目: 结算" in text


async def test_configured_titles_win_over_the_employee_language(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("Noted.")
    configured = on_stub(settings, stub_openai, memory_titles={"identity": "Who they are"})
    async with await Staffroom.open(settings=configured) as staff:
        dm = await staff.dm("pm", "maria")
        await collect(dm.post("My name is Maria Chen.", author="maria"))
        text = staff.memory.memory("pm", "maria").path.read_text(encoding="utf-8")
    assert titles(text) == ["Who they are", *list(DEFAULT_TITLES.values())[1:]]
