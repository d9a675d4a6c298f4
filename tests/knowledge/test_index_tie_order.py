"""Indexes whose rowids derive from the doc ids (each replica's own) order equal scores alike,
whatever order they indexed the documents in: the same hits in the same order, even where the
limit cuts through a tie."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.knowledge.documents import Document, SearchResult
from framework.knowledge.index import IN_MEMORY, KnowledgeIndex

# Five documents that score the same for 部署 (same words, same length), a better one, and
# documents without the word (so it is rare enough to count).
CITIES = {"e": "北京", "d": "上海", "c": "广州", "b": "深圳", "a": "杭州"}
TIED = [Document(f"note-{n}", "shared", f"部署 窗口 {city}") for n, city in CITIES.items()]
OTHERS = [
    Document("best", "shared", "部署 部署 部署"),
    *(Document(f"other-{n}", "employee:pm", f"灰度 发布 计划 {n}") for n in range(8)),
]


def answer(result: SearchResult) -> list[tuple[str, float]]:
    return [(hit.doc_id, hit.score) for hit in result.hits]


@pytest.mark.parametrize("limit", [3, 6, 10])
async def test_two_indexes_built_in_opposite_orders_answer_alike(
    tmp_path: Path, limit: int
) -> None:
    first = await KnowledgeIndex.open(tmp_path / "first.sqlite", fixed_ids=True)
    second = await KnowledgeIndex.open(IN_MEMORY, fixed_ids=True)  # a replica's own: in memory
    try:
        for doc in [*OTHERS, *TIED]:
            await first.upsert(doc)  # one at a time: rowids in this order
        for doc in reversed([*OTHERS, *TIED]):
            await second.upsert(doc)
        for collections in (None, ["shared"]):  # without and with the docs join
            ours = answer(await first.search("部署", collections=collections, limit=limit))
            theirs = answer(await second.search("部署", collections=collections, limit=limit))
            assert ours == theirs
            assert len(ours) == min(limit, 6) and ours[0][0] == "best"
            assert len({score for _, score in ours[1:]}) == 1, "the five really tie"
    finally:
        await first.close()
        await second.close()
