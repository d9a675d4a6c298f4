"""The knowledge layers, registered on a Staffroom's extensions like any other work.

- ``session_end``: each employee who spoke writes its journal block, one extraction run (with
  the self-check gate) reads the session, and its items are routed to trackers, topic files,
  the shared library and proposals; a ``knowledge`` event records all of it.
- prompt blocks: an employee's open tasks, goals, due reflections and proposals; and the topics
  ``knowledge.yaml``'s loading table names for the room's ``task_type``.
"""

from __future__ import annotations

from datetime import date

from framework.knowledge.after_session import after_session
from framework.knowledge.base import KnowledgeBase
from framework.knowledge.extractors import model_extractor, rules_extractor
from framework.knowledge.gate import Extractor
from framework.models.simulator import SimulatedChatModel
from framework.runtime.deps import RoomDeps
from framework.runtime.extensions import Extensions
from framework.runtime.hooks import HookCall, HookPoint
from framework.runtime.prompt_blocks import PromptScope
from framework.sessions.events import EventKind


def register_knowledge(ext: Extensions, kb: KnowledgeBase) -> None:
    """Register the knowledge layers' hook and prompt blocks on ``ext``."""

    async def knowledge(call: HookCall) -> None:
        ended = call.session
        if ended is None:
            return
        deps = call.room
        span = deps.log.tail_until(lambda e: e.id == ended.first)
        span = [e for e in span if e.kind != EventKind.SESSION_END]
        day = date.fromisoformat(span[-1].ts[:10]) if span else kb.today()
        done = await after_session(
            kb,
            span,
            session=str(deps.key),
            employees=deps.plan.participants,
            humans=deps.plan.humans,
            extractor=extractor_for(deps),
            day=day,
            entry_id=call.id,
        )
        if done.run is not None:
            call.events.emit(
                EventKind.KNOWLEDGE, "system", done.as_dict(), id=f"{call.id}-knowledge"
            )

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

    ext.hooks.on(HookPoint.SESSION_END, knowledge, name="knowledge")
    ext.blocks.add("open_items", "未完成的事项 / Open tasks, goals, proposals", open_items)
    ext.blocks.add("loaded_knowledge", "相关知识 / Knowledge for this task", loaded, max_chars=3000)


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
