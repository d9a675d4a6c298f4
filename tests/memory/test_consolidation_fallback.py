"""Consolidation's fallbacks are visible: a fallback event, the report, `history`, the exit code."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from cli_process import staffroom_process
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_openai import ChatOpenAI
from stub_openai import StubOpenAI

from framework import Event, EventKind, Room, Settings, Staffroom
from framework.memory.consolidation import ConsolidationReport
from framework.models import ScriptedChatModel
from framework.models.factory import ModelFactory
from framework.specs.model_spec import ModelSpec

HTML = "<html><head><title>llama.cpp</title></head><body>oops</body></html>"
RUSSIAN = "Вот краткое содержание разговора: пользователь спросил о развертывании."
SUMMARY = json.dumps({"history": ["alice 问了灰度方案"], "facts": []}, ensure_ascii=False)


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens once the socket is closed


def only_pm(model: BaseChatModel) -> ModelFactory:
    def factory(spec: ModelSpec, who: str) -> BaseChatModel | None:
        return model if who == "pm" else None

    return factory


def foreground(settings: Settings, **update: object) -> Settings:
    return settings.model_copy(update={"consolidate_in_background": False, **update})


async def chat_with_the_simulator(settings: Settings, posts: int = 11) -> None:
    """dm:alice@pm with ``2 * posts`` messages, none consolidated yet."""
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("pm", "alice")
        for i in range(posts):
            await drain(dm.post(f"问题 {i}：灰度怎么做？", author="alice"))


@dataclass(frozen=True)
class Consolidated:
    """A DM consolidated by its employee's model: the open Staffroom, the DM, the report and
    the model (its calls are the prompts)."""

    staff: Staffroom
    dm: Room
    report: ConsolidationReport
    model: ScriptedChatModel


@asynccontextmanager
async def consolidated_by_pm(settings: Settings, *answers: str) -> AsyncIterator[Consolidated]:
    """dm:alice@pm, 11 messages pm's scripted model answers with "好的。", then consolidated
    in the foreground, the model answering the consolidation prompts with ``answers``."""
    model = ScriptedChatModel(replies=["好的。"] * 11 + list(answers))
    opened = await Staffroom.open(settings=foreground(settings), model_factory=only_pm(model))
    async with opened as staff:
        dm = await staff.dm("pm", "alice")
        for i in range(11):
            await drain(dm.post(f"消息 {i}", author="alice"))
        yield Consolidated(staff, dm, await dm.consolidate(), model)


def fallbacks(events: list[Event]) -> list[dict[str, str]]:
    return [e.content for e in events if e.kind == EventKind.FALLBACK]


async def test_unusable_answers_fall_back_to_extractive_and_say_so_everywhere(
    settings: Settings,
) -> None:
    async with consolidated_by_pm(settings, HTML, RUSSIAN) as done:
        report, model = done.report, done.model
        label = done.dm.model_labels["pm"]
        lines = done.staff.memory.history(done.dm.key).lines()
        events = done.dm.history()
    reason = f"model answer unusable: not JSON ('{RUSSIAN[:39]}…')"
    assert report.batches == 1 and report.summarised_by == label
    assert report.fallbacks == [reason] and report.call_failed is False
    pointer = next(e for e in events if e.kind == EventKind.CONSOLIDATION)
    through = pointer.content["through"]
    assert fallbacks(events) == [
        {"what": "consolidation", "used": "extractive", "reason": reason, "through": through}
    ]
    assert any("alice：消息 0" in line for line in lines)  # the extractive summary, nothing lost
    # The retry showed the model what was wrong with its first answer.
    assert "not JSON ('<html><head><title>llama.cpp</title></h…')" in str(
        model.calls[-1][-1].content
    )
    shown = staffroom_process("history", "dm:alice@pm", data=settings.data_dir)
    assert f"⚠ fallback: consolidation → extractive ({reason})" in shown.out


async def test_a_bad_answer_then_a_good_one_uses_the_model(settings: Settings) -> None:
    async with consolidated_by_pm(settings, '{"history": "one line"}', SUMMARY) as done:
        lines = done.staff.memory.history(done.dm.key).lines()
        assert lines[0].endswith("alice 问了灰度方案")
        assert done.report.fallbacks == [] and fallbacks(done.dm.history()) == []
    assert "history: Input should be a valid list" in str(done.model.calls[-1][-1].content)


async def test_a_copied_example_or_punctuation_is_not_a_summary(settings: Settings) -> None:
    copied = '{"history": ["<who asked what; what was decided>"]}'  # small models do this
    async with consolidated_by_pm(settings, copied, '{"history": ["]["]}') as done:
        assert "repeats the example" in str(done.model.calls[-1][-1].content)
        reason = "model answer unusable: history has no line with words in it"
        assert done.report.fallbacks == [reason]


async def test_the_simulator_is_the_offline_path_not_a_fallback(settings: Settings) -> None:
    settings = foreground(settings)
    await chat_with_the_simulator(settings)
    async with await Staffroom.open(settings=settings) as staff:
        report = await (await staff.dm("pm", "alice")).consolidate()
    assert report.batches == 1 and report.summarised_by == "extractive (offline simulator)"
    assert report.fallbacks == []


async def test_a_server_that_is_down_still_gets_the_extractive_summary(settings: Settings) -> None:
    url = dead_url()
    settings = foreground(settings, model_retries=0)
    await chat_with_the_simulator(settings, posts=16)  # 32 messages: 22 to fold, 3 batches
    dead = ChatOpenAI(model="m", base_url=url, api_key="k", max_retries=0)  # type: ignore[arg-type]
    override = foreground(settings, model_override=ModelSpec.model_validate(f"openai:m@{url}"))
    async with await Staffroom.open(settings=override, model_factory=only_pm(dead)) as staff:
        dm = await staff.dm("pm", "alice")
        report = await dm.consolidate(force=True)
        assert staff.memory.history(dm.key).lines()  # written anyway
        events = dm.history()
    assert report.batches == 3 and report.call_failed is True
    assert report.summarised_by == "openai:m"
    assert len(report.fallbacks) == 3
    assert all(r.startswith(f"model call failed: cannot reach {url}") for r in report.fallbacks)
    assert [f["reason"] for f in fallbacks(events)] == report.fallbacks
    assert [e.kind for e in events].count(EventKind.CONSOLIDATION) == 3


async def test_consolidate_command_exits_1_when_the_model_cannot_be_called(
    settings: Settings,
) -> None:
    await chat_with_the_simulator(foreground(settings))
    url = dead_url()
    result = staffroom_process(
        "consolidate", "dm:alice@pm", "--model", f"openai:m@{url}", data=settings.data_dir
    )
    assert result.code == 1, result.out + result.err
    assert f"model call failed: cannot reach {url}" in result.out
    assert "extractive summary was written instead" in result.out
    assert (settings.data_dir / "history" / "dm:alice@pm" / "HISTORY.md").read_text().strip()


async def test_consolidate_command_warns_but_succeeds_on_an_unusable_answer(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    await chat_with_the_simulator(foreground(settings))
    model = f"openai:stub-model@{stub_openai.base_url}"
    result = staffroom_process(
        "consolidate", "dm:alice@pm", "--model", model, data=settings.data_dir
    )
    assert result.code == 0, result.out + result.err
    assert "summarised by: openai:stub-model" in result.out
    assert (
        "⚠ fallback: 1 of 1 batch(es) got the extractive summary instead of the model's: "
        "model answer unusable: not JSON ('stub reply')" in result.out
    )
    # A local OpenAI-compatible server gets the schema as llama.cpp reads it.
    first, retry = stub_openai.completions
    assert first.body["response_format"]["type"] == "json_object"
    assert first.body["response_format"]["schema"]["required"] == ["history"]
    assert "not JSON ('stub reply')" in str(retry.messages[-1]["content"])
