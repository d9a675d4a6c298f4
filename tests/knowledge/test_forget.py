"""Forget reaches every layer, keeps everything else as it was, and leaves no ghost in search."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import date, time
from pathlib import Path

import pytest
from cli_in_process import Cli

from framework.errors import InputError
from framework.knowledge.base import KnowledgeBase
from framework.knowledge.forget import forget_person, forget_text
from framework.knowledge.index import KnowledgeIndex
from framework.knowledge.journal import JournalEntry
from framework.memory.store import MemoryStore
from framework.settings import Settings
from framework.specs.knowledge_file import KnowledgeConfig

DAY = date(2026, 5, 30)
SECRET = "walrus-42 的门禁密码"
BOTH = ["open", "isolated"]


def _filled(tmp_path: Path) -> tuple[KnowledgeBase, MemoryStore]:
    """Every layer holds SECRET once, next to something unrelated."""
    config = KnowledgeConfig.model_validate({"isolated": {"readers": ["pm"]}})
    kb = KnowledgeBase(tmp_path, config, today=lambda: DAY)
    kb.topics("pm").update("机房", "team", add=[SECRET, "机房在三楼"])
    kb.topics("qa").update("测试", "team", add=["回归测试每周五跑"])
    kb.library.store("pm", "shared").update("机房", "team", add=[f"共享：{SECRET}"])
    kb.library.store("pm", "isolated").update("权限", "team", add=[f"隔离：{SECRET}", "名单"])
    kb.trackers.add_task("pm", f"更新 {SECRET}")
    kb.trackers.add_task("pm", "整理部署手册")
    entries = [JournalEntry("note", f"记下了\n{SECRET}"), JournalEntry("note", "今天很顺利")]
    kb.journal.append("pm", DAY, "dm:alice@pm", entries, entry_id="e-1", at=time(9, 0))
    # A fixed time: the heading's default (now) once read "00:42" and matched "walrus-42".
    qa_note = [JournalEntry("note", "冒烟通过")]
    kb.journal.append("qa", DAY, "dm:bob@qa", qa_note, entry_id="e-2", at=time(10, 0))
    memory = MemoryStore(Settings(data_dir=tmp_path))
    memory.memory("pm", "alice").add("facts", f"alice 知道 {SECRET}")
    memory.memory("pm", "alice").add("facts", "alice 喜欢简洁")
    memory.memory("pm", "bob").add("facts", "bob 负责预算")
    memory.history("dm:alice@pm").append([(DAY, f"alice 说了 {SECRET}"), (DAY, "alice 问了天气")])
    return kb, memory


@pytest.fixture
async def indexed(
    tmp_path: Path,
) -> AsyncIterator[tuple[KnowledgeBase, MemoryStore, KnowledgeIndex]]:
    """The layers synced into the index by hand, memory and history too (collections no search
    syncs: forget must clean them all the same)."""
    kb, memory = _filled(tmp_path)
    index = await KnowledgeIndex.open(kb.index_path)
    for name in ("pm", "qa"):
        await index.sync_files(kb.folder.topics_dir(name), f"employee:{name}")
        await index.sync_files(kb.folder.journals_dir / name, f"journals:{name}", scope=name)
    await index.sync_files(kb.library.path("shared"), "shared")
    await index.sync_files(kb.library.path("isolated"), "isolated", "isolated")
    await index.sync_files(memory.folder.memory_dir, "memory")
    await index.sync_files(memory.folder.history_dir, "history")
    yield kb, memory, index
    await index.close()
    await kb.close()


def _snapshot(root: Path) -> dict[Path, bytes]:
    return {
        p: p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.suffix in (".md", ".json") and not p.name.startswith(".")
    }


async def test_forget_text_removes_it_from_every_layer_and_the_index(
    tmp_path: Path, indexed: tuple[KnowledgeBase, MemoryStore, KnowledgeIndex]
) -> None:
    kb, memory, index = indexed
    found = await index.search(SECRET, partitions=BOTH, limit=20)
    assert {h.collection for h in found.hits} == {
        "employee:pm", "shared", "isolated", "journals:pm", "memory", "history",
    }  # fmt: skip
    before = _snapshot(tmp_path)
    (tracker_id,) = [t.id for t in kb.trackers.tasks("pm") if "walrus" in t.task]

    report = await forget_text(kb, "WALRUS-42  的门禁密码", memory=memory)  # normalised

    assert sorted((f.layer, f.where) for f in report.removed) == [
        ("history", "history/dm:alice@pm/HISTORY.md"),
        ("journal", "journals/pm/2026-05-30.md"),
        ("library:isolated", "library/isolated/team/权限.md"),
        ("library:shared", "library/shared/team/机房.md"),
        ("memory", "memory/pm/alice/MEMORY.md"),
        ("topic", "knowledge/pm/team/机房.md"),
        ("tracker", f"trackers/pm/tasks.json#{tracker_id}"),
    ]
    assert all(SECRET in f.what and "\n" not in f.what for f in report.removed)
    assert "forgot 7 item(s)" in report.render() and SECRET in report.render()
    assert json.loads(json.dumps(report.as_dict()))["removed"][0]["layer"] == "topic"

    after = _snapshot(tmp_path)
    assert not [p for p, data in after.items() if "walrus" in data.decode("utf-8")]
    changed = sorted(str(p.relative_to(tmp_path)) for p in before if before[p] != after.get(p))
    assert changed == [
        "history/dm:alice@pm/HISTORY.md",
        "journals/pm/2026-05-30.md",
        "knowledge/pm/team/机房.md",
        "library/isolated/team/权限.md",
        "library/shared/team/机房.md",
        "memory/pm/alice/MEMORY.md",
        "memory/pm/alice/facts.json",
        "trackers/pm/tasks.json",
    ]  # everything else is byte for byte what it was
    journal = tmp_path / "journals/pm/2026-05-30.md"
    removed_entry = f"- note: 记下了\n  {SECRET}\n".encode()
    assert after[journal] == before[journal].replace(removed_entry, b"")
    history = tmp_path / "history/dm:alice@pm/HISTORY.md"
    assert after[history] == before[history].replace(
        f"2026-05-30 alice 说了 {SECRET}\n".encode(), b""
    )
    assert kb.topics("pm").show("机房").entries == ("机房在三楼",)
    assert kb.library.store("pm", "isolated").show("权限").entries == ("名单",)
    # The shared topic held only the secret: deleted, not kept as an empty shell.
    assert not (tmp_path / "library/shared/team/机房.md").exists()
    assert [t.task for t in kb.trackers.tasks("pm")] == ["整理部署手册"]
    assert [e.text for e in kb.journal.read("pm", DAY).entries] == ["今天很顺利"]
    assert memory.memory("pm", "alice").read().sections["facts"] == ["alice 喜欢简洁"]

    gone = await index.search(SECRET, partitions=BOTH)
    assert not gone.hits and gone.no_match_reason
    # What was not forgotten is still found, in touched files too, whatever synced them.
    for word, collection in [
        ("三楼", "employee:pm"),
        ("名单", "isolated"),
        ("顺利", "journals:pm"),
    ]:
        hits = (await index.search(word, partitions=BOTH)).hits
        assert [h.collection for h in hits] == [collection], word
    assert [h.collection for h in (await index.search("简洁")).hits] == ["memory"]
    assert [h.collection for h in (await index.search("天气")).hits] == ["history"]


async def test_forget_text_for_one_employee_leaves_the_others(tmp_path: Path) -> None:
    kb, memory = _filled(tmp_path)
    kb.topics("qa").update("机房", "team", add=[f"qa 也知道 {SECRET}"])
    report = await forget_text(kb, SECRET, memory=memory, employee="qa")
    assert {f.layer for f in report.removed} == {"topic", "library:shared", "library:isolated"}
    assert kb.topics("pm").show("机房").entries == (SECRET, "机房在三楼")
    assert kb.topics("qa").find("机房") is None, "emptied by forget: deleted"
    assert not kb.index_path.exists(), "no index was there: none is made"


async def test_forget_person_removes_their_memory_dm_history_and_mentions(
    tmp_path: Path, indexed: tuple[KnowledgeBase, MemoryStore, KnowledgeIndex]
) -> None:
    kb, memory, index = indexed
    kb.trackers.add_task("pm", "问 alice 要数据")
    report = await forget_person(kb, "alice", memory=memory)

    assert not (tmp_path / "memory/pm/alice").exists()
    assert not (tmp_path / "history/dm:alice@pm").exists()
    assert memory.memory("pm", "bob").read().sections["facts"] == ["bob 负责预算"]
    assert [t.task for t in kb.trackers.tasks("pm")] == [f"更新 {SECRET}", "整理部署手册"]
    where = {(f.layer, f.where) for f in report.removed}
    assert {
        ("memory", "memory/pm/alice"),
        ("history", "history/dm:alice@pm"),
        ("index", "memory:pm/alice/MEMORY.md"),
        ("index", "history:dm:alice@pm/HISTORY.md"),
    } <= where
    assert {f.layer for f in report.removed} == {"memory", "history", "tracker", "index"}
    assert report.needle == "alice"
    for word in ("简洁", "天气"):  # (journal headings still name the DM session)
        assert not (await index.search(word, partitions=BOTH)).hits, word
    assert [h.collection for h in (await index.search("预算")).hits] == ["memory"]


async def test_forget_needs_words_and_says_when_nothing_matched(tmp_path: Path) -> None:
    kb, memory = _filled(tmp_path)
    for text in ("", "  \n"):
        with pytest.raises(InputError) as caught:
            await forget_text(kb, text, memory=memory)
        assert caught.value.field == "text" and caught.value.fix
    with pytest.raises(InputError):
        await forget_person(kb, "../alice", memory=memory)
    before = _snapshot(tmp_path)
    none = await forget_text(kb, "platypus", memory=memory)
    assert none.removed == () and none.render() == "nothing matched 'platypus'"
    assert none.as_dict() == {"needle": "platypus", "removed": []}
    assert _snapshot(tmp_path) == before


def test_a_forgotten_library_topic_is_no_shell_search_still_finds(tmp_path: Path, cli: Cli) -> None:
    """``staffroom forget`` then ``staffroom search``, as the broken-state run did: a library
    topic whose only entry was the text is gone, not found by its title or front matter; and
    front matter (category, dates, change notes) is never searchable text."""
    kb = KnowledgeBase(tmp_path, KnowledgeConfig(), today=lambda: DAY)
    shared = kb.library.store("pm", "shared")
    shared.update("门禁", "team", add=[SECRET], title="门禁密码")
    shared.update("发布", "team", add=["灰度发布分三批"], title="发布流程")
    folder = ["--data-dir", str(tmp_path)]

    def search(words: str) -> list[str]:
        done = cli("search", words, "--json", *folder)
        assert done.code in (0, 1) and "Traceback" not in done.err, done.err
        return [json.loads(line)["doc"] for line in done.out.splitlines()]

    assert search("门禁密码") == ["shared:team/门禁.md"]  # the title is searchable
    for words in ("created", "last_review", "2026-05-30"):  # front matter is not
        assert search(words) == [], words

    forgot = cli("forget", SECRET, *folder)
    assert forgot.code == 0 and "library/shared/team/门禁.md" in forgot.out, forgot.out
    for words in ("门禁密码", "门禁", "walrus", "forgot request", "team"):
        assert search(words) == [], words
    assert not (tmp_path / "library/shared/team/门禁.md").exists()
    assert search("发布流程") == ["shared:team/发布.md"], "the rest is found as before"
