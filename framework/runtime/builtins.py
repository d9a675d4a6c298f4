"""The built-in tools and hooks every Staffroom starts with, registered like anyone's.

Tools: ``read_file``, ``write_file``, ``list_files`` (held by employees whose card lists
them) and ``memory`` (held by everyone: it writes the MEMORY.md about the person served).
Hooks: save-as-SOP on a person's request and free remarks read as SOP corrections
(``message``, ``remark_hooks.py``), the statement rule after a reply
that left a stated fact unsaved (``reply``), an SOP draft nobody asked for when a reply
reports the task done (``reply``) or a session ends (``session_end``), the SOP feedback of a
finished SOP run (``run_end``), consolidation after replies (``background``, when
``Settings.consolidate_in_background``) and of everything at the end of a session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from framework.memory.memory_tool import memory_tool, people_said, remember_stated, rule_fallback
from framework.runtime.auto_extraction import extract_at_session_end, extract_when_done
from framework.runtime.consolidate import consolidator_for
from framework.runtime.extensions import Extensions
from framework.runtime.feedback import close_run, late_feedback, save_as_sop
from framework.runtime.hooks import HookCall, HookPoint
from framework.runtime.remark_hooks import open_at_end, read_remark
from framework.runtime.room_tools import ToolScope
from framework.sessions.events import EventKind
from framework.sop.extraction import is_save_request
from framework.specs.builtin_tools import BUILTIN_TOOLS
from framework.specs.employee import EmployeeCard
from framework.tools.base import Tool
from framework.tools.workspace import list_files_tool, read_file_tool, write_file_tool


def default_extensions() -> Extensions:
    """A fresh set of the built-in tools and hooks."""
    ext = Extensions()
    ext.add_tool("read_file", _read_file, given_to=_card_lists("read_file"))
    ext.add_tool("write_file", _write_file, given_to=_card_lists("write_file"))
    ext.add_tool("list_files", _list_files, given_to=_card_lists("list_files"))
    ext.add_tool("memory", _memory)
    ext.hooks.on(HookPoint.MESSAGE, save_on_request, name="save_as_sop")
    ext.hooks.on(HookPoint.MESSAGE, read_remark, name="remarks")
    ext.hooks.on(HookPoint.MESSAGE, feedback_after_close, name="late_feedback")
    # Before sop_feedback: understood remarks left unconfirmed are noted before the outcome.
    ext.hooks.on(HookPoint.RUN_END, open_at_end, name="remarks")
    ext.hooks.on(HookPoint.RUN_END, sop_feedback, name="sop_feedback")
    ext.hooks.on(HookPoint.REPLY, statement_rule, name="statement_rule")
    ext.hooks.on(HookPoint.REPLY, extract_when_done, name="auto_extraction")
    ext.hooks.on(HookPoint.BACKGROUND, consolidate_if_due, name="consolidation")
    # Before consolidation: the draft is distilled from the conversation alone.
    ext.hooks.on(HookPoint.SESSION_END, extract_at_session_end, name="auto_extraction")
    ext.hooks.on(HookPoint.SESSION_END, consolidate_session, name="consolidation")
    return ext


def _card_lists(name: str) -> Callable[[EmployeeCard], bool]:
    """Held by employees whose card lists ``name`` (one of the cards' BUILTIN_TOOLS)."""
    assert name in BUILTIN_TOOLS, name

    def given_to(card: EmployeeCard) -> bool:
        return name in card.tools

    return given_to


def _read_file(scope: ToolScope) -> Tool:
    return read_file_tool(scope.workspace)


def _write_file(scope: ToolScope) -> Tool:
    return write_file_tool(scope.workspace, employee=scope.employee, claims=scope.claims)


def _list_files(scope: ToolScope) -> Tool:
    return list_files_tool(scope.workspace)


def _memory(scope: ToolScope) -> Tool:
    memory = scope.memory.memory(scope.employee, scope.user)
    heard = people_said(scope.log) if scope.log is not None else None
    return memory_tool(memory, source=str(scope.session), heard=heard)


async def feedback_after_close(call: HookCall) -> None:
    """A person's corrections or score after an SOP run closed still count for that run."""
    if call.message is not None:
        await late_feedback(call.room, call.events, call.message)


async def save_on_request(call: HookCall) -> None:
    """A person asked to keep this way of working: store an SOP draft from the session."""
    if call.message is not None and is_save_request(str(call.message["content"])):
        await save_as_sop(call.room, call.events, str(call.message["id"]))


async def statement_rule(call: HookCall) -> None:
    """The person stated a lasting fact and the model did not save it: the rule does.

    Recorded as a ``fallback`` event per change, so a model that ignores the memory tool is
    seen, not hidden. The offline simulator is left alone (it calls the tool itself).
    """
    reply = call.reply
    if reply is None or reply.offline or not reply.said or reply.answering is None:
        return
    if "memory" in reply.tools_called:
        return
    memory_file = call.room.memory.memory(reply.employee, reply.answering)
    source = f"rule:{call.room.key}"
    changes = await asyncio.to_thread(remember_stated, memory_file, reply.said, source=source)
    for n, change in enumerate(changes, start=1):
        content = rule_fallback(memory_file, change, reply.answering, call.room.plan.language)
        call.events.emit(EventKind.FALLBACK, reply.employee, content, id=f"{call.id}-rule-{n}")


async def sop_feedback(call: HookCall) -> None:
    """The run's outcome against its SOP version, and the next version it proposes."""
    if call.run is not None and call.run.state.get("phase") in ("sop", "wrapup"):
        await close_run(call.room, call.events, call.run.state, call.run.reason)


async def consolidate_if_due(call: HookCall) -> None:
    """Fold old turns into HISTORY.md and MEMORY.md once past the window."""
    if call.room.settings.consolidate_in_background:
        await consolidator_for(call.room).run()  # returns at once while under the window


async def consolidate_session(call: HookCall) -> None:
    """A session ended: fold all of it into HISTORY.md and MEMORY.md."""
    await consolidator_for(call.room).run(everything=True)
