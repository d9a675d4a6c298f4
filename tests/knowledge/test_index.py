"""The knowledge index on real SQLite files: search, partitions, folders kept in sync, rebuilds."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from framework.errors import InputError, StorageError
from framework.knowledge.documents import Document, Partition, SearchResult
from framework.knowledge.index import NO_WORDS, KnowledgeIndex

OPEN_DOCS = [
    Document(
        "deploy", "employee:pm", "上线前先在预发环境部署，k8s 集群分三批灰度。", title="部署手册"
    ),
    Document("rollback", "employee:pm", "回滚预案：出现告警立即回滚到上一个版本。", title="回滚"),
    Document("design", "shared", "The design review checks API compatibility.", scope="team-a"),
    Document("plan", "shared", "季度方案评审，讨论预算与部署节奏。", scope="team-b"),
]
SECRET = Document(
    "salary", "isolated", "薪资 调整 名单 部署 k8s isolated secret", partition=Partition.ISOLATED
)


@pytest.fixture
async def index(tmp_path: Path) -> AsyncIterator[KnowledgeIndex]:
    opened = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    await opened.upsert(*OPEN_DOCS, SECRET)
    yield opened
    await opened.close()


def ids(result: SearchResult) -> list[str]:
    return [hit.doc_id for hit in result.hits]


async def test_chinese_two_character_words_match(index: KnowledgeIndex) -> None:
    result = await index.search("怎么部署")
    assert set(ids(result)) == {"deploy", "plan"}
    assert ids(result)[0] == "deploy"  # in its title too
    hit = result.hits[0]
    assert (hit.title, hit.collection, hit.partition) == ("部署手册", "employee:pm", "open")
    assert "部署" in hit.snippet and hit.score > 0
    assert result.no_match_reason is None and result.terms == ("部署",)


async def test_mixed_and_english_queries(index: KnowledgeIndex) -> None:
    assert ids(await index.search("K8S集群")) == ["deploy"]
    assert ids(await index.search("api Compatibility")) == ["design"]


async def test_no_match_says_why(index: KnowledgeIndex) -> None:
    result = await index.search("数据库迁移")
    assert result.hits == () and result.terms == ("数据", "据库", "数据库", "迁移")
    assert (await index.search("kafka 分区")).no_match_reason == (
        "no document contains any of: kafka, 分区"
    )
    assert (await index.search("的 了 the of ？！")).no_match_reason == NO_WORDS
    only_pm = await index.search("design", collections=["employee:pm"])
    assert only_pm.no_match_reason == "no document in employee:pm contains any of: design"


async def test_collections_and_scopes_filter(index: KnowledgeIndex) -> None:
    assert ids(await index.search("部署", collections=["shared"])) == ["plan"]
    assert ids(await index.search("部署", collections=[])) == []
    assert ids(await index.search("评审", scopes=["team-a"])) == []
    assert ids(await index.search("评审 review", scopes=["team-a", "team-b"])) != []


async def test_isolated_documents_only_for_entitled_queries(index: KnowledgeIndex) -> None:
    assert "salary" not in ids(await index.search("薪资 部署"))
    assert (await index.search("薪资")).no_match_reason is not None
    both = await index.search("薪资 部署", partitions=["open", "isolated"])
    assert ids(both)[0] == "salary" and both.hits[0].partition is Partition.ISOLATED
    assert ids(await index.search("部署", partitions=[Partition.ISOLATED])) == ["salary"]


HOSTILE = [
    '"x" OR isolated',
    '"薪资" OR "secret"',
    "*",
    "薪资*",
    "NEAR(薪资 部署)",
    "NEAR(",
    "partition:isolated",
    "{partition collection}: isolated",
    "tokens:薪资",
    "- 薪资",
    "NOT 部署",
    "部署 AND NOT x",
    '"',
    "'",
    '""""',
    "') OR 1=1 --",
    "'; DROP TABLE docs; --",
    "^薪资",
    "薪资 + secret",
    "rowid:1",
    "\x00薪资",
    "(((",
    "名单 调整",
    "ISOLATED SECRET SALARY",
]


@pytest.mark.parametrize("query", HOSTILE)
async def test_no_query_text_reaches_the_isolated_partition(
    index: KnowledgeIndex, query: str
) -> None:
    for collections in (None, ["isolated"], ["shared", "isolated"]):
        for scopes in (None, [""]):
            result = await index.search(query, collections=collections, scopes=scopes, limit=50)
            assert all(hit.partition is Partition.OPEN for hit in result.hits), query
            assert "salary" not in ids(result)
    # The same text, asked of the isolated partition, is plain words too: no syntax error.
    await index.search(query, partitions=["isolated"])


async def test_every_word_of_the_isolated_document_is_still_refused(index: KnowledgeIndex) -> None:
    words = await index.search(SECRET.text, partitions=["isolated"])
    for word in words.terms:
        assert ids(await index.search(word, limit=100)) != ["salary"]
        assert "salary" not in ids(await index.search(word, limit=100))


async def test_upsert_replaces_and_reports_changes(index: KnowledgeIndex) -> None:
    assert await index.upsert(OPEN_DOCS[0]) == 0  # identical: left alone
    moved = Document("deploy", "employee:pm", "改成讲监控告警。", partition=Partition.ISOLATED)
    assert await index.upsert(moved) == 1
    assert "deploy" not in ids(await index.search("监控 部署"))
    assert ids(await index.search("监控", partitions=["isolated"])) == ["deploy"]
    assert await index.remove("deploy") and not await index.remove("deploy")
    assert ids(await index.search("监控", partitions=["open", "isolated"])) == []


async def test_bad_arguments_are_input_errors(index: KnowledgeIndex) -> None:
    with pytest.raises(InputError, match="partition"):
        await index.search("部署", partitions=["secret"])
    with pytest.raises(InputError, match="limit"):
        await index.search("部署", limit=0)


async def test_very_common_words_are_left_out_when_rarer_ones_exist(tmp_path: Path) -> None:
    with_index = await KnowledgeIndex.open(tmp_path / "common.sqlite")
    docs = [Document(f"d{i}", "c" if i % 2 else "other", f"项目 周报 第{i}期") for i in range(20)]
    await with_index.upsert(*docs, Document("rare", "c", "项目 里程碑 延期"))
    result = await with_index.search("项目 里程碑")
    assert ids(result) == ["rare"] and result.ignored == ("项目",)
    # The rarer word misses in this collection: the common one counts again.
    fallback = await with_index.search("项目 里程碑", collections=["other"], limit=3)
    assert len(fallback.hits) == 3 and fallback.ignored == ()
    # Only common words: they are all searched.
    assert len((await with_index.search("项目 周报", limit=30)).hits) == 21
    await with_index.close()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_sync_files_is_incremental_and_leaves_no_ghosts(tmp_path: Path) -> None:
    kb = tmp_path / "knowledge" / "pm"
    write(kb / "learning" / "发布.md", "# 发布流程\n灰度发布分三批。")
    write(kb / "team" / "people.md", "Alice owns the release train.")
    write(kb / ".trash" / "old.md", "灰度 should not be indexed")
    (kb / "notes.txt").write_text("灰度 not markdown", encoding="utf-8")
    index = await KnowledgeIndex.open(tmp_path / "index.sqlite")

    first = await index.sync_files(kb, "employee:pm")
    assert sorted(first.added) == ["employee:pm:learning/发布.md", "employee:pm:team/people.md"]
    hit = (await index.search("灰度")).hits[0]
    assert (hit.doc_id, hit.title, hit.source) == (
        "employee:pm:learning/发布.md",
        "发布流程",
        str((kb / "learning" / "发布.md").resolve()),
    )
    again = await index.sync_files(kb, "employee:pm")
    assert again.added == again.updated == again.removed == () and len(again.unchanged) == 2

    # A hand edit is picked up on the next sync; a new file is searchable at once.
    edited = write(kb / "learning" / "发布.md", "# 发布流程\n改为蓝绿部署。")
    os.utime(edited, ns=(1, 1))  # an editor may keep odd times: any change of stat counts
    write(kb / "strategy" / "新方案.md", "# 新方案\n容量评估先行。")
    third = await index.sync_files(kb, "employee:pm")
    assert third.updated == ("employee:pm:learning/发布.md",)
    assert third.added == ("employee:pm:strategy/新方案.md",)
    assert ids(await index.search("灰度")) == []
    assert ids(await index.search("蓝绿")) == ["employee:pm:learning/发布.md"]
    assert ids(await index.search("容量评估")) == ["employee:pm:strategy/新方案.md"]

    # Touched but unchanged bytes: not segmented again, reported unchanged.
    os.utime(kb / "team" / "people.md", ns=(2, 2))
    assert "employee:pm:team/people.md" in (await index.sync_files(kb, "employee:pm")).unchanged

    (kb / "team" / "people.md").unlink()
    gone = await index.sync_files(kb, "employee:pm")
    assert gone.removed == ("employee:pm:team/people.md",)
    assert (await index.search("alice release")).hits == ()
    await index.close()


async def test_unreadable_files_are_skipped_with_the_reason(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "good.md", "部署")
    (kb / "latin1.md").write_bytes("caf\xe9".encode("latin-1"))
    index = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    report = await index.sync_files(kb, "shared")
    assert report.added == ("shared:good.md",)
    assert len(report.skipped) == 1 and "latin1.md" in report.skipped[0]
    await index.close()


async def test_a_folder_moved_to_the_isolated_partition_leaves_open_search(tmp_path: Path) -> None:
    lib = tmp_path / "library"
    write(lib / "hr.md", "# 薪资\n调薪 名单")
    index = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    await index.sync_files(lib, "library", "open")
    assert ids(await index.search("调薪")) == ["library:hr.md"]
    moved = await index.sync_files(lib, "library", Partition.ISOLATED)
    assert moved.updated == ("library:hr.md",)
    assert ids(await index.search("调薪")) == []
    assert ids(await index.search("调薪", partitions=["isolated"])) == ["library:hr.md"]
    await index.close()


async def test_remove_where_forgets_a_folder(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    write(kb / "alice" / "a.md", "alice 的偏好")
    write(kb / "bob" / "b.md", "bob 的偏好")
    index = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    await index.sync_files(kb, "employee:pm")
    prefix = str((kb / "alice").resolve()) + os.sep
    assert await index.remove_where(source_prefix=prefix) == ("employee:pm:alice/a.md",)
    assert ids(await index.search("偏好")) == ["employee:pm:bob/b.md"]
    assert await index.remove_where(source_prefix=prefix) == ()
    await index.close()


async def test_rebuild_and_reopen_give_the_same_answers(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    for i in range(12):
        write(
            kb / f"t{i}.md",
            f"# 主题{i}\n部署 第{i}步 " + "灰度 " * i + ("rollback" if i % 3 else ""),
        )
    path = tmp_path / "index.sqlite"
    index = await KnowledgeIndex.open(path)
    await index.sync_files(kb, "employee:pm")
    await index.upsert(*OPEN_DOCS)
    queries = ["部署", "灰度 rollback", "主题3", "api 部署", "回滚 灰度"]
    before = [await index.search(q) for q in queries]
    assert await index.rebuild() == 12 + len(OPEN_DOCS)
    assert [await index.search(q) for q in queries] == before
    await index.close()

    # A changed tokenizer stamp (rules or jieba changed) rebuilds on open.
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = 'older rules' WHERE key = 'tokenizer'")
    conn.close()
    reopened = await KnowledgeIndex.open(path)
    assert [await reopened.search(q) for q in queries] == before
    await reopened.close()


async def test_two_handles_on_one_file_see_each_others_writes(tmp_path: Path) -> None:
    one = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    two = await KnowledgeIndex.open(tmp_path / "index.sqlite")
    await one.upsert(OPEN_DOCS[0])
    assert ids(await two.search("部署")) == ["deploy"]
    await two.remove("deploy")
    assert ids(await one.search("部署")) == []
    await one.close()
    await two.close()


async def test_a_broken_index_file_is_a_storage_error_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="delete it") as caught:
        await KnowledgeIndex.open(path)
    assert str(path) in str(caught.value)

    other = tmp_path / "other.sqlite"
    await (await KnowledgeIndex.open(other)).close()
    with sqlite3.connect(other) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    conn.close()
    with pytest.raises(StorageError, match="schema 99"):
        await KnowledgeIndex.open(other)
