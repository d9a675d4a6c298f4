"""Search hits as text: what the ``search_knowledge`` tool hands the model and what
``staffroom search`` prints, in one place below both (source path, collection, snippet)."""

from __future__ import annotations

from pathlib import Path

from framework.knowledge.base import KnowledgeBase
from framework.knowledge.documents import SearchResult
from framework.phrases import Language, Phrase

SEARCH_BUDGET = 2000
"""Characters of search results a tool call hands the model (hits past it are counted)."""


NO_KNOWLEDGE = Phrase(
    en="No knowledge found: {why}",
    zh="没有找到相关知识：{why}",
)
HIT = Phrase(
    en="[{n}] {source} ({collection}, score {score})",
    zh="[{n}] {source}（{collection}，得分 {score}）",
)
LEFT_OUT = Phrase(
    en="... {n} more result(s) left out (budget)",
    zh="……还有 {n} 条结果未列出（超出预算）",
)
TOO_COMMON = Phrase(
    en="(too common to rank by: {words})",
    zh="（太常见，不参与排序：{words}）",
)


def render_hits(
    kb: KnowledgeBase, found: SearchResult, budget: int = SEARCH_BUDGET, language: Language = "en"
) -> str:
    """Hits as the model (and the CLI, labelled in ``language``) sees them: source path,
    collection, snippet; or why there are none. Past ``budget`` characters the remaining hits
    are counted, not shown."""
    if not found.hits:
        return NO_KNOWLEDGE(language, why=found.no_match_reason)
    lines: list[str] = []
    used = 0
    for n, hit in enumerate(found.hits, start=1):
        source = _relative(kb, hit.source)
        head = HIT(
            language, n=n, source=source, collection=hit.collection, score=f"{hit.score:.2f}"
        )
        block = f"{head}\n{hit.snippet}"
        if used + len(block) > budget and lines:
            lines.append(LEFT_OUT(language, n=len(found.hits) - n + 1))
            break
        lines.append(block)
        used += len(block)
    if found.ignored:
        lines.append(TOO_COMMON(language, words=", ".join(found.ignored)))
    return "\n".join(lines)


def _relative(kb: KnowledgeBase, source: str) -> str:
    try:
        return str(Path(source).resolve().relative_to(kb.data_dir.resolve()))
    except ValueError:
        return source


__all__ = ["SEARCH_BUDGET", "render_hits"]
