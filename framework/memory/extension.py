"""Memory's part in a room, registered like anyone's: the memory tool, the statement rule
after a reply, and consolidation (after replies in the background, and of everything at the
end of a session).

The store is captured at registration (``register(extensions, store, ...)``); a hook gets
only its event and the session's context.
"""

from __future__ import annotations

import asyncio

from framework.extensions.context import HookContext
from framework.extensions.hooks import BackgroundDue, ReplyLogged, SessionEnded
from framework.extensions.registry import Extensions
from framework.extensions.tools import ToolScope
from framework.memory.consolidation import Consolidator, extractive_summariser
from framework.memory.memory_tool import memory_tool, people_said, remember_stated, rule_fallback
from framework.memory.model_summary import model_summariser
from framework.memory.store import MemoryStore
from framework.models.simulator import SimulatedChatModel
from framework.sessions.events import EventKind
from framework.tools.base import Tool

OFFLINE_SUMMARY = "extractive (offline simulator)"


def register(ext: Extensions, store: MemoryStore, *, consolidate_in_background: bool) -> None:
    """Give every employee the memory tool; hook the statement rule and consolidation after
    replies (:func:`register_session_end` hooks the end of a session: registered apart, so
    the composition decides what runs before it).

    ``consolidate_in_background``: ``Settings.consolidate_in_background`` (fold old turns
    after replies, not only at the end of a session).
    """

    def memory(scope: ToolScope) -> Tool:
        memory_file = store.memory(scope.employee, scope.user)
        heard = people_said(scope.log) if scope.log is not None else None
        return memory_tool(memory_file, source=str(scope.session), heard=heard)

    async def statement_rule(reply: ReplyLogged, ctx: HookContext) -> None:
        """The person stated a lasting fact and the model did not save it: the rule does.

        Recorded as a ``fallback`` event per change, so a model that ignores the memory tool
        is seen, not hidden. The offline simulator is left alone (it calls the tool itself).
        """
        if reply.offline or not reply.said or reply.answering is None:
            return
        if "memory" in reply.tools_called:
            return
        memory_file = store.memory(reply.employee, reply.answering)
        source = f"rule:{ctx.key}"
        changes = await asyncio.to_thread(remember_stated, memory_file, reply.said, source=source)
        for n, change in enumerate(changes, start=1):
            content = rule_fallback(memory_file, change, reply.answering, ctx.language)
            ctx.events.emit(EventKind.FALLBACK, reply.employee, content, id=f"{reply.id}-rule-{n}")

    async def consolidate_if_due(_due: BackgroundDue, ctx: HookContext) -> None:
        """Fold old turns into HISTORY.md and MEMORY.md once past the window."""
        if consolidate_in_background:
            await consolidator_for(ctx, store).run()  # returns at once while under the window

    ext.add_tool("memory", memory)
    ext.hooks.on_reply_logged(statement_rule, name="statement_rule")
    ext.hooks.on_background(consolidate_if_due, name="consolidation")


def register_session_end(ext: Extensions, store: MemoryStore) -> None:
    """Hook consolidation of the whole session at its end."""

    async def consolidate_session(_ended: SessionEnded, ctx: HookContext) -> None:
        """A session ended: fold all of it into HISTORY.md and MEMORY.md."""
        await consolidator_for(ctx, store).run(everything=True)

    ext.hooks.on_session_ended(consolidate_session, name="consolidation")


def consolidator_for(ctx: HookContext, store: MemoryStore) -> Consolidator:
    """The consolidator of one room or DM.

    The first participant's model summarises (a DM's employee); the offline simulator takes
    the deterministic extractive path instead of pretending to summarise (the offline path,
    not a fallback). Facts go to the MEMORY.md of every employee in the session about the
    person who stated them.
    """
    humans = set(ctx.humans)
    employees = ctx.participants
    model = ctx.model(employees[0])
    if isinstance(model.chat, SimulatedChatModel):
        summariser, by = extractive_summariser(humans), OFFLINE_SUMMARY
    else:
        summariser = model_summariser(
            model.chat,
            ctx.renderer,
            humans,
            model.profile,
            retries=model.retries,
            backoff=model.backoff,
        )
        by = model.profile.label
    return Consolidator(
        log=ctx.log,
        history=store.history(ctx.key),
        memory_for=store.memory,
        employees=employees,
        window=ctx.scenario_settings.memory_window,
        summarise=summariser,
        summarised_by=by,
    )
