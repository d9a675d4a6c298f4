"""A fact that updates an entry replaces it when a session is consolidated, offline by the
memory tool's rule and with a model by the number it gives: MEMORY.md (what the prompt
carries) shows the current value only, and the old one is kept in the fact record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from langchain_core.language_models.chat_models import BaseChatModel
from paths import ROOT

from framework import Event, EventKind, Settings, Staffroom
from framework.memory.consolidation import Consolidator, extractive_summariser
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.memory.supersede import KnownEntry, numbered, resolve
from framework.models import ScriptedChatModel
from framework.models.factory import ModelFactory
from framework.sessions.events import make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.specs.model_spec import ModelSpec


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def only_pm(model: BaseChatModel) -> ModelFactory:
    def factory(spec: ModelSpec, who: str) -> BaseChatModel | None:
        return model if who == "pm" else None

    return factory


def staffroom_memory(data: Path) -> str:
    """What ``staffroom memory pm --user alice`` prints (MEMORY.md and the fact record)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    cmd = [
        sys.executable,
        "-m",
        "framework",
        "memory",
        "pm",
        "--user",
        "alice",
        "--data-dir",
        str(data),
    ]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def consolidate_offline(folder: Path, *said: str) -> MemoryFile:
    """alice says each line in turn (a reply after each); each exchange is consolidated by
    the offline path before the next, as sessions days apart would be."""
    log, memory = JsonlLog(folder / "session.jsonl"), MemoryFile(folder / "MEMORY.md")
    for n, text in enumerate(said):
        human = {"human": True}
        log.append(make_event("dm:alice@pm", EventKind.MESSAGE, "alice", text, meta=human))
        log.append(make_event("dm:alice@pm", EventKind.MESSAGE, "pm", f"Noted {n}."))
        await Consolidator(
            log=log,
            history=HistorySummary(folder / "HISTORY.md"),
            memory_for=lambda _e, _u: memory,
            employees=["pm"],
            window=20,
            summarise=extractive_summariser({"alice"}),
        ).run(everything=True)
    return memory


def superseded(memory: MemoryFile) -> list[tuple[str, str]]:
    return [(s.old, s.new) for s in memory.facts.load()[1]]


async def test_offline_an_update_replaces_the_entry_it_updates(tmp_path: Path) -> None:
    memory = await consolidate_offline(
        tmp_path,
        "Order ORTAND-88 is currently pending.",
        "Priya is the lead on the payments team.",
        "Update: order ORTAND-88 has shipped.",
        "Leadership on the payments team changed. Sam is now the lead.",
    )
    shown = memory.text()
    assert "pending" not in shown and "Priya" not in shown
    assert "Update: order ORTAND-88 has shipped." in shown
    assert "Leadership on the payments team changed. Sam is now the lead." in shown
    assert superseded(memory) == [
        ("Order ORTAND-88 is currently pending.", "Update: order ORTAND-88 has shipped."),
        (
            "Priya is the lead on the payments team.",
            "Leadership on the payments team changed. Sam is now the lead.",
        ),
    ]


async def test_offline_another_order_is_another_fact(tmp_path: Path) -> None:
    memory = await consolidate_offline(
        tmp_path, "Order ORTAND-88 is currently pending.", "Update: order ORTAND-91 has shipped."
    )
    assert "Order ORTAND-88 is currently pending." in memory.text()
    assert superseded(memory) == []


async def test_offline_a_chinese_update_of_a_tool_entry_replaces_it(tmp_path: Path) -> None:
    # The memory tool kept the first value; the update is no statement the offline rules
    # know, but it updates that entry, so consolidation replaces it.
    MemoryFile(tmp_path / "MEMORY.md").add("facts", "数据库迁移工单的优先级是 P2。")
    memory = await consolidate_offline(tmp_path, "数据库迁移工单的优先级升级为 P0。")
    assert "P2" not in memory.text() and "数据库迁移工单的优先级升级为 P0。" in memory.text()
    assert superseded(memory) == [
        ("数据库迁移工单的优先级是 P2。", "数据库迁移工单的优先级升级为 P0。")
    ]


def answer(*facts: dict[str, object], history: str) -> str:
    return json.dumps({"history": [history], "facts": list(facts)}, ensure_ascii=False)


async def dm_consolidated_by(
    settings: Settings, model: ScriptedChatModel, seeds: list[tuple[str, str]], said: list[str]
) -> tuple[MemoryFile, list[Event]]:
    """dm:alice@pm with ``seeds`` in alice's MEMORY.md, ``said`` posted (the model answers
    each with a scripted reply), then consolidated by ``model``."""
    settings = settings.model_copy(update={"consolidate_in_background": False})
    async with await Staffroom.open(settings=settings, model_factory=only_pm(model)) as staff:
        memory = staff.memory.memory("pm", "alice")
        for section, entry in seeds:
            memory.add(section, entry)
        dm = await staff.dm("pm", "alice")
        for text in said:
            await drain(dm.post(text, author="alice"))
        await dm.consolidate()
        return memory, dm.history()


async def test_a_model_names_the_entry_a_fact_replaces(settings: Settings) -> None:
    said = ["Heads up about Friday.", "Correction: the design meeting is at 3pm instead."]
    said += [f"Question {i} about the rollout?" for i in range(9)]
    fact = {"user": "alice", "section": "facts", "entry": "Design meeting: 3pm Friday"}
    # A weak model's odd field costs the summary nothing: that one fact is added as new.
    odd = {"user": "alice", "section": "facts", "entry": "Heads up about Friday", "replaces": True}
    summary = answer(
        {**fact, "replaces": "#2"}, odd, history="alice moved the design meeting to 3pm"
    )
    model = ScriptedChatModel(replies=["OK."] * len(said) + [summary])
    seeds = [("preferences", "Prefers bullet points"), ("facts", "Design meeting at 2pm Friday")]
    memory, events = await dm_consolidated_by(settings, model, seeds, said)
    prompt = str(model.calls[-1][0].content)
    assert "1. alice / preferences: Prefers bullet points" in prompt
    assert "2. alice / facts: Design meeting at 2pm Friday" in prompt
    assert '"replaces"' in prompt
    shown = memory.text()
    assert "Design meeting: 3pm Friday" in shown and "2pm" not in shown
    assert "Prefers bullet points" in shown
    assert superseded(memory) == [("Design meeting at 2pm Friday", "Design meeting: 3pm Friday")]
    assert "Heads up about Friday" in shown
    assert [e.content["reason"] for e in events if e.kind == EventKind.FALLBACK] == [
        "the model said 'Heads up about Friday' replaces 'true', which is no entry number"
    ]
    # The fact record `staffroom memory` shows keeps the old value.
    assert "Design meeting at 2pm Friday" in staffroom_memory(settings.data_dir)


async def test_a_number_that_names_no_entry_is_ignored_visibly_in_chinese(
    settings: Settings,
) -> None:
    said = ["设计评审那边，时间换到周五下午四点。", "预算评审定周四。"]
    said += [f"第 {i} 个关于灰度的问题？" for i in range(9)]
    moved = {"user": "alice", "section": "facts", "entry": "设计评审：周五下午四点", "replaces": 1}
    other = {"user": "alice", "section": "facts", "entry": "预算评审：周四", "replaces": 7}
    summary = answer(moved, other, history="alice 说设计评审改到周五下午四点")
    model = ScriptedChatModel(replies=["好的。"] * len(said) + [summary])
    seeds = [("facts", "设计评审在周五上午十点")]
    memory, events = await dm_consolidated_by(settings, model, seeds, said)
    assert "他们 MEMORY.md 里现有的条目：\n1. alice / facts: 设计评审在周五上午十点" in str(
        model.calls[-1][0].content
    )
    shown = memory.text()
    assert "设计评审：周五下午四点" in shown and "上午十点" not in shown
    assert "预算评审：周四" in shown  # added as a new fact; it replaced nothing
    assert superseded(memory) == [("设计评审在周五上午十点", "设计评审：周五下午四点")]
    ignored = [e.content for e in events if e.kind == EventKind.FALLBACK]
    assert ignored == [
        {
            "what": "memory",
            "used": "作为新事实写入",
            "reason": "模型说 '预算评审：周四' 取代第 7 条，但列出的只有第 1-1 条",
        }
    ]


async def test_a_model_may_not_replace_what_it_was_not_shown(settings: Settings) -> None:
    said = ["Please keep answers short."] + [f"Question {i} about the rollout?" for i in range(10)]
    fact = {"user": "alice", "section": "preferences", "entry": "Keep answers short"}
    summary = answer({**fact, "replaces": 1}, history="alice asked about the rollout")
    model = ScriptedChatModel(replies=["OK."] * len(said) + [summary])
    memory, events = await dm_consolidated_by(settings, model, [], said)
    assert "MEMORY.md entries now" not in str(model.calls[-1][0].content)
    assert "Keep answers short" in memory.text()
    reasons = [e.content["reason"] for e in events if e.kind == EventKind.FALLBACK]
    assert reasons == [
        "the model said 'Keep answers short' replaces entry 1, but no entries were shown"
    ]


def test_the_entries_shown_fit_the_budget_and_a_number_names_only_its_persons_entry() -> None:
    known = [KnownEntry("alice", "facts", f"Rollout step {i} runs on Monday") for i in range(40)]
    shown, text = numbered(known, 200)
    assert 0 < len(shown) < 40 and len(text) <= 200
    assert text.splitlines()[1] == "2. alice / facts: Rollout step 1 runs on Monday"
    assert resolve("alice", "Rollout step 1 runs on Tuesday", 2, shown, "en") == (known[1], None)
    assert resolve("alice", "Rollout step 1 runs on Tuesday", "2", shown, "en")[0] == known[1]
    old, why = resolve("bob", "Bob's desk: 9", 1, shown, "en")
    assert old is None and why is not None
    assert why["reason"] == (
        'the model said "Bob\'s desk: 9" (about bob) replaces entry 1, which is about alice'
    )
    old, why = resolve("alice", "Rollout step 9 runs on Friday", 0, shown, "en")
    assert old is None and why is not None and "entries shown run 1-" in why["reason"]


async def test_a_question_or_a_condition_never_replaces_a_fact(tmp_path: Path) -> None:
    due = "The Q3 report is due on August 15th."
    for n, asked in enumerate(
        [
            "Has the Q3 report deadline been moved to September 1st?",
            "Could the Q3 report deadline be moved to September 1st?",
            "If the Q3 report deadline gets pushed back to September 1st, tell me.",
        ]
    ):
        memory = await consolidate_offline(tmp_path / f"en{n}", due, asked)
        assert superseded(memory) == [] and due in memory.path.read_text(encoding="utf-8")
    zh_due = "Q3 报告的截止日期是 8 月 15 日。"
    for n, asked in enumerate(
        ["Q3 报告的截止日期改到 9 月 1 日了吗？", "如果 Q3 报告的截止日期改到 9 月 1 日，告诉我。"]
    ):
        memory = await consolidate_offline(tmp_path / f"zh{n}", zh_due, asked)
        assert superseded(memory) == []


async def test_a_tickets_new_state_replaces_its_old_one_and_not_another_tickets(
    tmp_path: Path,
) -> None:
    memory = await consolidate_offline(
        tmp_path / "a", "Ticket #4411 is blocked.", "Ticket #4411 is now resolved."
    )
    assert superseded(memory) == [("Ticket #4411 is blocked.", "Ticket #4411 is now resolved.")]
    other = await consolidate_offline(
        tmp_path / "b", "Ticket #4411 is blocked.", "Ticket #4412 is now resolved."
    )
    assert superseded(other) == []
    text = other.path.read_text(encoding="utf-8")
    assert "Ticket #4411 is blocked." in text and "Ticket #4412 is now resolved." in text
    kept = await consolidate_offline(tmp_path / "c", "If ticket #4411 is blocked, call me.")
    assert not kept.path.exists() or "#4411" not in kept.path.read_text(encoding="utf-8")


async def test_a_copied_entry_number_does_not_delete_an_unrelated_entry(
    settings: Settings,
) -> None:
    said = ["I'm on the payments team now."] + [
        f"Question {i} about the rollout?" for i in range(10)
    ]
    fact = {"user": "alice", "section": "facts", "entry": "Works on the payments team"}
    summary = answer({**fact, "replaces": 1}, history="alice joined the payments team")
    model = ScriptedChatModel(replies=["OK."] * len(said) + [summary])
    seeds = [("identity", "name: Alice Wong")]
    memory, events = await dm_consolidated_by(settings, model, seeds, said)
    shown = memory.text()
    assert "name: Alice Wong" in shown and "Works on the payments team" in shown
    assert superseded(memory) == []
    reasons = [e.content["reason"] for e in events if e.kind == EventKind.FALLBACK]
    assert reasons == [
        "the model said 'Works on the payments team' replaces entry 1 ('name: Alice Wong'), "
        "which is about something else"
    ]
