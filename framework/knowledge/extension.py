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
from typing import Literal

from pydantic import BaseModel, Field

from framework.extensions.context import HookContext
from framework.extensions.hooks import SessionEnded
from framework.extensions.prompt_blocks import PromptScope
from framework.extensions.registry import Extensions
from framework.extensions.tools import ToolScope
from framework.knowledge.after_session import SessionKnowledge, after_session
from framework.knowledge.base import KnowledgeBase
from framework.knowledge.extractors import model_extractor, rules_extractor
from framework.knowledge.gate import Extractor
from framework.knowledge.hits import render_hits
from framework.knowledge.search import collections_for, sync
from framework.models.simulator import SimulatedChatModel
from framework.phrases import Phrase
from framework.sessions.events import Event, EventKind
from framework.tools.base import Tool, ToolResult


class SearchArgs(BaseModel):
    """Arguments of the ``search_knowledge`` tool."""

    query: str = Field(description="What to look for: a few keywords, Chinese or English.")
    partition: Literal["open", "isolated"] = Field(
        "open", description="open (default), or isolated if you are entitled to it."
    )
    limit: int = Field(5, ge=1, le=10, description="How many results at most (1-10).")


OPEN_ITEMS = Phrase(
    en="Open tasks, goals, proposals",
    zh="未完成的事项",
)
LOADED_KNOWLEDGE = Phrase(
    en="Knowledge for this task",
    zh="相关知识",
)


def register(ext: Extensions, kb: KnowledgeBase) -> None:
    """Register the knowledge layers' tool, hook and prompt blocks on ``ext``."""

    async def knowledge(ended: SessionEnded, ctx: HookContext) -> None:
        span = ctx.log.tail_until(lambda e: e.id == ended.first)
        await extract_span(kb, ctx, span, entry_id=ended.id)

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
    ext.hooks.on_session_ended(knowledge, name="knowledge")
    ext.blocks.add("open_items", OPEN_ITEMS, open_items)
    ext.blocks.add("loaded_knowledge", LOADED_KNOWLEDGE, loaded, max_chars=3000)


async def extract_span(
    kb: KnowledgeBase, ctx: HookContext, span: list[Event], *, entry_id: str
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
        session=str(ctx.key),
        employees=ctx.participants,
        humans=ctx.humans,
        extractor=extractor_for(ctx),
        day=day,
        entry_id=entry_id,
    )
    for employee in done.journals:
        await asyncio.to_thread(kb.ensure_reflection, employee)
    if done.run is not None:
        ctx.events.emit(EventKind.KNOWLEDGE, "system", done.as_dict(), id=f"{entry_id}-knowledge")
        index = await kb.index()
        for employee in ctx.participants:
            await sync(index, collections_for(kb, employee))
    return done


async def extract_new(kb: KnowledgeBase, ctx: HookContext) -> SessionKnowledge:
    """``staffroom extract``: :func:`extract_span` over what the session said since its last
    extraction (the whole log the first time), as its end would. Nothing new: a report with no
    run. Idempotent: the entry id is the newest event's."""
    span = ctx.log.tail_until(lambda e: e.kind == EventKind.KNOWLEDGE)
    span = [e for e in span if e.kind not in (EventKind.KNOWLEDGE, EventKind.SESSION_END)]
    if not span:
        return SessionKnowledge(str(ctx.key))
    return await extract_span(kb, ctx, span, entry_id=f"extract-{span[-1].id}")


def extractor_for(ctx: HookContext) -> Extractor:
    """The room's first employee's model extracts; the offline simulator uses the rules."""
    model = ctx.model(ctx.participants[0])
    if isinstance(model.chat, SimulatedChatModel):
        return rules_extractor
    return model_extractor(
        model.chat, ctx.renderer, model.profile, retries=model.retries, backoff=model.backoff
    )
