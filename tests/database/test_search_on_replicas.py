"""The search index is derived: replicas on a database, each with its own index, on one shared
folder (reached by two paths), answer every query alike after writes from either, and alike
with a replica that builds its index only now."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from paths import ROOT

from framework.knowledge.base import KnowledgeBase
from framework.knowledge.journal import JournalEntry
from framework.settings import Settings
from framework.stores import Stores

# (query, employee): an employee's own view, another's, and the operator's (None).
QUERIES = [("发布 窗口", "pm"), ("灰度", "dev"), ("发布", None), ("周四", "pm"), ("审批", None)]
Answer = list[tuple[str, str, str, float, str, str]]


async def answers(kb: KnowledgeBase) -> dict[tuple[str, str | None], Answer]:
    """Every query's hits as a caller sees them (the source inside the data folder)."""
    found: dict[tuple[str, str | None], Answer] = {}
    for query, employee in QUERIES:
        result = await kb.search(query, employee=employee, limit=10)
        found[query, employee] = [
            (h.doc_id, h.collection, h.title, h.score, h.snippet, _inside(h.source, kb))
            for h in result.hits
        ]
    return found


def _inside(source: str, kb: KnowledgeBase) -> str:
    return Path(source).resolve().relative_to(kb.data_dir.resolve()).as_posix()


@pytest.fixture
async def folder(tmp_path: Path) -> AsyncIterator[tuple[Path, Path]]:
    """The shared folder, and a second path to it (another machine's mount point)."""
    data, mount = tmp_path / "data", tmp_path / "mount"
    data.mkdir()
    mount.symlink_to(data)
    yield data, mount


async def replica(data_dir: Path, url: str) -> Stores:
    settings = Settings(data_dir=data_dir, project_dir=ROOT, allow_network=False, database=url)
    return await Stores.open(settings=settings, writes=True)


async def test_replicas_answer_alike_after_writes_from_either(
    pg_url: str, folder: tuple[Path, Path]
) -> None:
    a, b = await replica(folder[0], pg_url), await replica(folder[1], pg_url)
    try:
        ka, kb = a.knowledge(), b.knowledge()
        assert ka.own_index and kb.own_index and not ka.index_path.exists()
        await asyncio.to_thread(
            ka.topics("pm").update, "zeta", "learning", add=["发布 窗口 周二 晚上"]
        )
        await asyncio.to_thread(
            kb.topics("dev").update, "部署", "learning", add=["部署 先 灰度 10%", "发布 需要 审批"]
        )
        first = await answers(ka)  # A indexes now: zeta, then dev's topic
        assert first["灰度", "dev"] and first["发布 窗口", "pm"]

        # B writes a topic tied with zeta for 发布 窗口 (its path sorts first: indexed first by
        # a fresh index, last by A's), removes the topic A indexed, and A keeps a journal.
        await asyncio.to_thread(
            kb.topics("pm").update, "alpha", "learning", add=["发布 窗口 周二 晚上"]
        )
        await asyncio.to_thread(kb.topics("dev").remove_topic, "部署")
        note = [JournalEntry("observation", "灰度 发布 顺利")]
        await asyncio.to_thread(
            ka.journal.append, "pm", ka.today(), "dm:alice@pm", note, entry_id="e-1"
        )
        on_a, on_b = await answers(ka), await answers(kb)
        assert on_a == on_b
        tied = on_a["发布 窗口", "pm"]
        assert sorted(hit[0] for hit in tied[:2]) == [
            "employee:pm:learning/alpha.md",
            "employee:pm:learning/zeta.md",
        ]
        assert tied[0][3] == tied[1][3], "the two topics really tie"
        assert on_a["灰度", "dev"] == [] and on_a["审批", None] == [], "the removed topic is gone"

        # A person edits zeta by hand on one machine: same size, same mtime (a file system
        # with coarse timestamps, or two writes in one tick). Both replicas see the new words.
        path = folder[0] / "knowledge" / "pm" / "learning" / "zeta.md"
        before = path.stat()
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("周二", "周四"), encoding="utf-8")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert path.stat().st_size == before.st_size
        on_a, on_b = await answers(ka), await answers(kb)
        assert on_a == on_b and [h[0] for h in on_a["周四", "pm"]] == [
            "employee:pm:learning/zeta.md"
        ]

        c = await replica(folder[0], pg_url)  # a replica started now builds its index afresh
        try:
            assert await answers(c.knowledge()) == on_a
        finally:
            await c.close()
    finally:
        await a.close()
        await b.close()
