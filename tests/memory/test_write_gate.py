"""Memory keeps what people state and refuses junk, on every write path, visibly.

The gate is judged on messages people write (and on memtrust-cli's third-party fixtures, run
offline through the same adapter shape as ``benchmarks/memtrust_eval.py``: only each record's
content reaches Staffroom).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from framework import Event, EventKind, Settings, Staffroom
from framework.memory.consolidation import Consolidator, extractive_summariser
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.memory.memory_tool import memory_tool, people_said
from framework.memory.write_gate import judge
from framework.models import ScriptedChatModel
from framework.sessions.events import make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.specs.model_spec import ModelSpec
from framework.statements import stated_facts


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def only_pm(model: ScriptedChatModel):  # type: ignore[no-untyped-def]
    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    return factory


def memory_call(content: str, action: str = "add", section: str = "facts") -> AIMessage:
    args = {"action": action, "section": section, "content": content}
    call = {"name": "memory", "args": args, "id": "m1", "type": "tool_call"}
    return AIMessage(content="", tool_calls=[call])


@pytest.mark.parametrize(
    "junk",
    [
        "key: text",
        "<key>: <value>",
        "2026-12-02 12.03.26",
        "date: 2026-12-02",
        "[INFO] worker-3 started, pid=4411, queue=default, backlog=0",
        "2026-12-02 12:03:26 INFO 服务启动完成",
        "Heartbeat OK. Uptime 3d 4h, CPU 2%.",
        'Traceback (most recent call last):  File "app.py", line 9, in main',
        '{"error": "upstream timeout", "status": 502}',
        "Got it, thanks!",
        "收到，谢谢！",
    ],
)
def test_junk_is_refused(junk: str) -> None:
    assert judge(junk) is not None


@pytest.mark.parametrize(
    "fact",
    [
        "name: Maria Chen",
        "Prefers answers in bullet points",
        "偏好语言: English",
        "Alice's phone: 555-0101",
        "deadline: 2026-12-15",
        "周五 15:00 与设计团队评审",
        "Our backend config lives in config.yaml",
        "Ticket #4411 from Acme Corp: checkout API returns HTTP 502",
        "The Q3 report deadline was pushed back to September 1st.",
    ],
)
def test_facts_people_state_pass(fact: str) -> None:
    assert judge(fact) is None


def test_english_and_chinese_statements_are_kept_whole_with_labels_in_their_language() -> None:
    said = "Hi, my name is Maria Chen and I'm the support lead. I prefer answers in bullet points."
    assert [f.entry for f in stated_facts(said)] == [
        "name: Maria Chen",
        "role: support lead",
        "Prefers answers in bullet points",
    ]
    assert [f.entry for f in stated_facts("我叫王芳，我是支付团队的负责人。")] == [
        "姓名: 王芳",
        "角色: 支付团队的负责人",
    ]
    # Ordinary chat states nothing lasting.
    for chat in ["Continue please.", "The reply is fine, send it.", "I need it by noon."]:
        assert stated_facts(chat) == []


async def test_the_tool_refuses_placeholders_and_invented_profiles_visibly(
    settings: Settings,
) -> None:
    model = ScriptedChatModel(
        replies=[
            memory_call("key: text"),
            memory_call("User's favorite color is teal and they have three cats"),
            memory_call("Prefers answers in bullet points", section="preferences"),
            "Noted.",
        ]
    )
    async with await Staffroom.open(settings=settings, model_factory=only_pm(model)) as staff:
        dm = await staff.dm("pm", "maria")
        events = await drain(dm.post("I prefer answers in bullet points.", author="maria"))
        memory = staff.memory.memory("pm", "maria")
        shown = memory.read().sections
        text = memory.path.read_text(encoding="utf-8")
    results = [e.content for e in events if e.kind == EventKind.TOOL_RESULT]
    assert [r["ok"] for r in results] == [False, False, True]
    assert "placeholder" in results[0]["output"] and "nobody" in results[1]["output"]
    refused = [e.content for e in events if e.kind == EventKind.FALLBACK]
    assert [f["what"] for f in refused] == ["memory", "memory"]
    assert "'key: text' was not stored" in refused[0]["reason"]
    assert "favorite, color, teal" in refused[1]["reason"]
    assert shown["preferences"] == ["Prefers answers in bullet points"]
    assert shown["facts"] == []
    # Titled in pm's language (its card's zh), not the person's (test_memory_language.py).
    assert text.startswith("# 用户身份\n")


async def test_a_model_summary_keeps_stated_facts_and_drops_junk(settings: Settings) -> None:
    summary = {
        "history": ["2026-12-02 12.03.26", "maria introduced herself and the Q3 deadline"],
        "facts": [
            {"user": "maria", "section": "identity", "entry": "key: text"},
            {"user": "maria", "section": "identity", "entry": "name: Maria Chen"},
            {"user": "maria", "section": "facts", "entry": "Maria lives in a lighthouse"},
        ],
    }
    replies: list[object] = ["Noted."] * 11 + [json.dumps(summary)]
    model = ScriptedChatModel(replies=replies)
    settings = settings.model_copy(update={"consolidate_in_background": False})
    async with await Staffroom.open(settings=settings, model_factory=only_pm(model)) as staff:
        dm = await staff.dm("pm", "maria")
        await drain(dm.post("Hi, my name is Maria Chen.", author="maria"))
        for i in range(10):
            await drain(dm.post(f"Question {i} about the Q3 report", author="maria"))
        report = await dm.consolidate()
        entries = staff.memory.memory("pm", "maria").read().sections
        lines = staff.memory.history(dm.key).lines()
        events = dm.history()
    assert entries["identity"] == ["name: Maria Chen"] and entries["facts"] == []
    assert report.refused_facts == ["key: text", "Maria lives in a lighthouse"]
    reasons = [e.content["reason"] for e in events if e.kind == EventKind.FALLBACK]
    assert any("placeholder" in r for r in reasons) and any("nobody" in r for r in reasons)
    assert all("12.03.26" not in line for line in lines)
    assert any("Q3 deadline" in line for line in lines)


def test_a_correction_leaves_only_the_current_value_in_the_prompt(tmp_path: Path) -> None:
    memory = MemoryFile(tmp_path / "MEMORY.md")
    memory.add("facts", "The Q3 report is due on August 15th.")
    memory.add("facts", "Ticket INC-204 is owned by Sam.")
    change = memory.add("facts", "The Q3 report deadline was pushed back to September 1st.")
    assert change.action == "replaced" and change.old == "The Q3 report is due on August 15th."
    assert memory.read().sections["facts"] == [
        "The Q3 report deadline was pushed back to September 1st.",
        "Ticket INC-204 is owned by Sam.",
    ]
    # Another ticket is another fact, whatever the marker says.
    assert memory.add("facts", "Update: ticket INC-207 is now owned by Priya.").action == "added"
    _, superseded = memory.facts.load()
    assert [s.old for s in superseded] == ["The Q3 report is due on August 15th."]


FIXTURES = "extraction_quality_cases.json"


def _memtrust_cases() -> list[dict[str, object]]:
    data = pytest.importorskip("memtrust.data")
    path = Path(data.__file__).parent / FIXTURES
    cases: list[dict[str, object]] = json.loads(path.read_text(encoding="utf-8"))["cases"]
    return cases


async def test_memtrust_fixtures_through_the_tool_and_offline_consolidation(
    tmp_path: Path,
) -> None:
    """Each record's content only: the person says it, then the tool adds it, and the
    offline consolidation folds the same message in (both in fresh folders)."""
    for case in _memtrust_cases():
        content, keep = str(case["content"]), bool(case["should_be_stored"])
        folder = tmp_path / str(case["case_id"])
        folder.mkdir()
        log = JsonlLog(folder / "session.jsonl")
        said = make_event("dm:alice@pm", EventKind.MESSAGE, "alice", content, meta={"human": True})
        log.append(said)
        tool = memory_tool(MemoryFile(folder / "tool" / "MEMORY.md"), heard=people_said(log))
        stored = (await tool.call({"action": "add", "section": "facts", "content": content})).ok
        # A person may state a profile about themselves; machine text is never theirs.
        if case["category"] != "hallucinated_profile":
            assert stored == keep, case["case_id"]
        log.append(make_event("dm:alice@pm", EventKind.MESSAGE, "pm", "Noted."))
        consolidated = MemoryFile(folder / "MEMORY.md")
        await Consolidator(
            log=log,
            history=HistorySummary(folder / "HISTORY.md"),
            memory_for=lambda _e, _u, m=consolidated: m,
            employees=["pm"],
            window=20,
            summarise=extractive_summariser({"alice"}),
        ).run(everything=True)
        kept = content in consolidated.text()
        assert kept == keep, case["case_id"]
