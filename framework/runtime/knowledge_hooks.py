"""The knowledge layers, registered on a Staffroom's extensions like any other work.

- ``session_end``: each employee who spoke writes its journal block, one extraction run (with
  the self-check gate) reads the session, and its items are routed to trackers, topic files,
  the shared library and proposals; a ``knowledge`` event records all of it.
- prompt blocks: an employee's open tasks, goals, due reflections and proposals; and the topics
  ``knowledge.yaml``'s loading table names for the room's ``task_type``.
- the ``search_knowledge`` tool, held by every employee: BM25 over what it may read (its own
  topics and journals, the shared library; the isolated partition only if entitled), each hit
  with its source path, within a character budget.
"""

from __future__ import annotations

import asyncio
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from framework.knowledge.after_session import SessionKnowledge, after_session
from framework.knowledge.base import KnowledgeBase
from framework.knowledge.documents import SearchResult
from framework.knowledge.extractors import model_extractor, rules_extractor
from framework.knowledge.gate import Extractor
from framework.knowledge.search import collections_for, sync
from framework.models.simulator import SimulatedChatModel
from framework.phrases import Language, Phrase
from framework.runtime.deps import RoomDeps
from framework.runtime.extensions import Extensions
from framework.runtime.hooks import HookCall, HookPoint
from framework.runtime.prompt_blocks import PromptScope
from framework.runtime.room_tools import ToolScope
from framework.runtime.sink import EventSink
from framework.sessions.events import Event, EventKind
from framework.tools.base import Tool, ToolResult

SEARCH_BUDGET = 2000
"""Characters of search results a tool call hands the model (hits past it are counted)."""


class SearchArgs(BaseModel):
    """Arguments of the ``search_knowledge`` tool."""

    query: str = Field(description="What to look for: a few keywords, Chinese or English.")
    partition: Literal["open", "isolated"] = Field(
        "open", description="open (default), or isolated if you are entitled to it."
    )
    limit: int = Field(5, ge=1, le=10, description="How many results at most (1-10).")


OPEN_ITEMS = Phrase(en="Open tasks, goals, proposals", zh="未完成的事项")
LOADED_KNOWLEDGE = Phrase(en="Knowledge for this task", zh="相关知识")


def register_knowledge(ext: Extensions, kb: KnowledgeBase) -> None:
    """Register the knowledge layers' hook and prompt blocks on ``ext``."""

    async def knowledge(call: HookCall) -> None:
        ended = call.session
        if ended is None:
            return
        span = call.room.log.tail_until(lambda e: e.id == ended.first)
        await extract_span(kb, call.room, call.events, span, entry_id=call.id)

    def open_items(scope: PromptScope) -> str | None:
        items = kb.trackers.open_items(scope.employee)
        lines = [
            f"- [{t.priority}] {t.task}"
            + (f" (waiting for {t.waiting_for})" if t.waiting_for else "")
            for t in items.tasks
        ]
        lines += [
            f"- goal: {g.goal}" + (f" (by {g.target_date})" if g.target_date else "")
            for g in items.goals
        ]
        lines += [f"- reflection due: {r.what}" for r in items.reflections]
        lines += [f"- proposal: {p.recommendation} ({p.status})" for p in items.proposals]
        return "\n".join(lines) or None

    def loaded(scope: PromptScope) -> str | None:
        wanted = kb.config.what_to_load(scope.task_type) if scope.task_type else []
        if not wanted:
            return None
        stores = [kb.topics(scope.employee), kb.library.store(scope.employee, "shared")]
        lines: list[str] = []
        for ref in wanted:
            for store in stores:
                for topic in store.list():
                    hit = topic.slug == ref or ref == f"category:{topic.category}"
                    if hit and topic.entries:
                        where = topic.path.relative_to(kb.data_dir)
                        lines.append(f"[{where}]\n" + "\n".join(f"- {e}" for e in topic.entries))
        return "\n".join(lines) or None

    def search_tool(scope: ToolScope) -> Tool:
        async def run(args: SearchArgs) -> ToolResult:
            found = await kb.search(
                args.query, employee=scope.employee, partition=args.partition, limit=args.limit
            )
            return ToolResult(True, render_hits(kb, found))

        return Tool(
            "search_knowledge",
            "Search what you know: your topic files and journals and the shared library "
            "(BM25 keyword search; Chinese and English). Returns the best passages, each with "
            "its source file.",
            SearchArgs,
            run,
        )

    ext.add_tool("search_knowledge", search_tool)
    ext.hooks.on(HookPoint.SESSION_END, knowledge, name="knowledge")
    ext.blocks.add("open_items", OPEN_ITEMS, open_items)
    ext.blocks.add("loaded_knowledge", LOADED_KNOWLEDGE, loaded, max_chars=3000)


async def extract_span(
    kb: KnowledgeBase, deps: RoomDeps, sink: EventSink, span: list[Event], *, entry_id: str
) -> SessionKnowledge:
    """Journal, extract and route ``span`` of the room's log (a session's end, or what
    ``staffroom extract`` finds new); record it as a ``knowledge`` event ``{entry_id}-knowledge``
    and sync the index, so what was routed is searchable before the next turn.

    ``entry_id`` makes it idempotent: journal blocks are keyed by it and items are
    deduplicated, so a re-run after a crash adds nothing twice."""
    span = [e for e in span if e.kind not in (EventKind.SESSION_END, EventKind.KNOWLEDGE)]
    day = date.fromisoformat(span[-1].ts[:10]) if span else kb.today()
    done = await after_session(
        kb,
        span,
        session=str(deps.key),
        employees=deps.plan.participants,
        humans=deps.plan.humans,
        extractor=extractor_for(deps),
        day=day,
        entry_id=entry_id,
    )
    for employee in done.journals:
        await asyncio.to_thread(kb.ensure_reflection, employee)
    if done.run is not None:
        sink.emit(EventKind.KNOWLEDGE, "system", done.as_dict(), id=f"{entry_id}-knowledge")
        index = await kb.index()
        for employee in deps.plan.participants:
            await sync(index, collections_for(kb, employee))
    return done


async def extract_new(kb: KnowledgeBase, deps: RoomDeps) -> SessionKnowledge:
    """``staffroom extract``: :func:`extract_span` over what the session said since its last
    extraction (the whole log the first time), as its end would. Nothing new: a report with no
    run. Idempotent: the entry id is the newest event's."""
    span = deps.log.tail_until(lambda e: e.kind == EventKind.KNOWLEDGE)
    span = [e for e in span if e.kind not in (EventKind.KNOWLEDGE, EventKind.SESSION_END)]
    if not span:
        return SessionKnowledge(str(deps.key))
    return await extract_span(kb, deps, deps.sink(), span, entry_id=f"extract-{span[-1].id}")


def extractor_for(deps: RoomDeps) -> Extractor:
    """The room's first employee's model extracts; the offline simulator uses the rules."""
    first = deps.plan.participants[0]
    model = deps.models.chat[first]
    if isinstance(model, SimulatedChatModel):
        return rules_extractor
    return model_extractor(
        model,
        deps.renderer,
        deps.models.profiles[first],
        retries=deps.settings.model_retries,
        backoff=deps.settings.model_backoff,
    )


NO_KNOWLEDGE = Phrase(en="No knowledge found: {why}", zh="没有找到相关知识：{why}")
HIT = Phrase(
    en="[{n}] {source} ({collection}, score {score})",
    zh="[{n}] {source}（{collection}，得分 {score}）",
)
LEFT_OUT = Phrase(
    en="... {n} more result(s) left out (budget)", zh="……还有 {n} 条结果未列出（超出预算）"
)
TOO_COMMON = Phrase(en="(too common to rank by: {words})", zh="（太常见，不参与排序：{words}）")


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
