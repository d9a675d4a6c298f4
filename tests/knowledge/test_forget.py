"""Forget reaches every layer, keeps everything else as it was, and leaves no ghost in search."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from framework.errors import InputError
from framework.knowledge.base import KnowledgeBase
from framework.knowledge.forget import forget_person, forget_text
from framework.knowledge.journal import JournalEntry
from framework.memory.store import MemoryStore
from framework.settings import Settings
from framework.specs.knowledge_file import KnowledgeConfig

DAY = date(2026, 5, 30)
SECRET = "walrus-42 的门禁密码"


def _filled(tmp_path: Path) -> tuple[KnowledgeBase, MemoryStore]:
    config = KnowledgeConfig.model_validate({"isolated": {"readers": ["pm"]}})
    kb = KnowledgeBase(tmp_path, config, today=lambda: DAY)
    kb.topics("pm").update("机房", "team", add=[SECRET, "机房在三楼"])
    kb.library.store("pm", "shared").update("机房", "team", add=[f"共享：{SECRET}"])
    kb.library.store("pm", "isolated").update("权限", "team", add=[f"隔离：{SECRET}"])
    kb.trackers.add_task("pm", f"更新 {SECRET}")
    kb.trackers.add_task("pm", "整理部署手册")
    entries = [JournalEntry("note", f"记下了 {SECRET}"), JournalEntry("note", "今天很顺利")]
    kb.journal.append("pm", DAY, "dm:alice@pm", entries, entry_id="e-1")
    memory = MemoryStore(Settings(data_dir=tmp_path))
    memory.memory("pm", "alice").add("facts", f"alice 知道 {SECRET}")
    memory.memory("pm", "alice").add("facts", "alice 喜欢简洁")
    memory.history("dm:alice@pm").append([(DAY, f"alice 说了 {SECRET}"), (DAY, "alice 问了天气")])
    return kb, memory


async def test_forget_text_removes_it_from_every_layer_and_the_index(tmp_path: Path) -> None:
    kb, memory = _filled(tmp_path)
    before = await kb.search("walrus-42")  # builds the index: a ghost would show up below
    assert before.hits
    assert (await kb.search("walrus-42", partition="isolated")).hits

    report = await forget_text(kb, "WALRUS-42", memory=memory)  # case does not matter

    layers = sorted({f.layer for f in report.removed})
    assert layers == [
        "history", "journal", "library:isolated", "library:shared", "memory", "topic", "tracker",
    ]  # fmt: skip
    assert "walrus-42" in report.render()
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".json"):
            assert "walrus-42" not in path.read_text(encoding="utf-8"), path
    assert kb.topics("pm").show("机房").entries == ("机房在三楼",)
    assert [t.task for t in kb.trackers.tasks("pm")] == ["整理部署手册"]
    assert [e.text for e in kb.journal.read("pm", DAY).entries] == ["今天很顺利"]
    assert memory.memory("pm", "alice").read().sections["facts"] == ["alice 喜欢简洁"]
    assert memory.history("dm:alice@pm").lines() == ["2026-05-30 alice 问了天气"]
    for partition in ("open", "isolated"):
        after = await kb.search("walrus-42", partition=partition)
        assert not after.hits and after.no_match_reason
    assert (await kb.search("三楼")).hits, "what was not forgotten is still found"
    await kb.close()


async def test_forget_person_removes_their_memory_and_dm_history(tmp_path: Path) -> None:
    kb, memory = _filled(tmp_path)
    kb.trackers.add_task("pm", "问 alice 要数据")
    report = await forget_person(kb, "alice", memory=memory)
    assert not (tmp_path / "memory" / "pm" / "alice").exists()
    assert not (tmp_path / "history" / "dm:alice@pm").exists()
    assert "问 alice 要数据" not in [t.task for t in kb.trackers.tasks("pm")]
    assert {"memory", "history", "tracker"} <= {f.layer for f in report.removed}
    await kb.close()


async def test_forget_needs_words_and_says_when_nothing_matched(tmp_path: Path) -> None:
    kb, memory = _filled(tmp_path)
    with pytest.raises(InputError, match="forget"):
        await forget_text(kb, "  ", memory=memory)
    none = await forget_text(kb, "platypus", memory=memory)
    assert none.removed == () and none.render() == "nothing matched 'platypus'"
