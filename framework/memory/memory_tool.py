"""The ``memory`` tool: the model keeps its own MEMORY.md about the user (add, replace, remove).

Mistakes the model can fix (a missing argument, an entry that matches nothing, a full file)
come back as ``ToolResult(ok=False)`` with the reason, never as an exception. Every entry
passes the write gate (:mod:`~framework.memory.write_gate`) first, judged against what the
people in the session said; a refused entry comes back to the model with the reason and is
recorded as a ``fallback`` event, so people see what was not stored and why.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from framework.errors import InputError, MemoryCapExceeded
from framework.memory.entries import clean_entry
from framework.memory.memory_file import MemoryChange, MemoryFile
from framework.memory.write_gate import Refusal, judge
from framework.phrases import Phrase
from framework.sessions.events import EventKind
from framework.sessions.jsonl_log import JsonlLog
from framework.statements import stated_facts
from framework.tools.base import Tool, ToolResult

__all__ = [
    "MemoryArgs",
    "describe_change",
    "memory_tool",
    "people_said",
    "remember_stated",
    "rule_fallback",
]

NOT_STORED = Phrase(
    en="nothing stored in MEMORY.md",
    zh="没有写入 MEMORY.md",
)
_HAN = re.compile(r"[\u3400-\u9fff]")
REFUSED = Phrase(
    en="{entry!r} was not stored: {reason}",
    zh="{entry!r} 没有存入：{reason}",
)
# The statement rule's fallback (see :func:`rule_fallback`), in the session's language.
RULE_ADDED = Phrase(
    en='the statement rule added to "{section}": {entry}', zh="陈述规则写入「{section}」：{entry}"
)
RULE_REPLACED = Phrase(
    en='the statement rule replaced in "{section}": {entry} (was: {old})',
    zh="陈述规则改写「{section}」：{entry}（原为：{old}）",
)
RULE_REASON = Phrase(
    en="{person} stated it and the model did not call the memory tool",
    zh="{person} 说了这件事，模型没有调用记忆工具",
)

_DESCRIPTION = """\
Your long-term memory about this user (MEMORY.md), kept across sessions and shown to you at \
the start of each one. Save only durable facts a person stated, one short line each, in \
their words, a name whole:
- identity: who the user is (name, team, role), e.g. `name: Maria Chen`
- project: what they work on (code names, goals, constraints)
- preferences: how they want you to work (reply language, tone, format)
- facts: key dates, decisions, commitments
Never save logs, status reports, errors, JSON, timestamps or what nobody said; such entries \
are refused. An entry is stored exactly as given.
To change an entry use `replace` (old = the entry or a distinctive part of it), not a second \
`add`; an `add` with the same key or nearly the same text replaces the old entry anyway. Use \
`remove` for entries that are no longer true. The file has a hard cap of {cap} characters; \
if a write is refused, merge or remove entries as the error says, then retry."""


class MemoryArgs(BaseModel):
    """Arguments of the ``memory`` tool."""

    action: Literal["add", "replace", "remove"] = Field(
        description="add a new entry, replace an existing one, or remove one."
    )
    section: Literal["identity", "project", "preferences", "facts"] = Field(
        description="identity, project, preferences (language, tone, format) or facts."
    )
    content: str | None = Field(
        None, description="The new entry, one short line (for add and replace)."
    )
    old: str | None = Field(
        None, description="The entry to replace or remove: its text or a distinctive part."
    )


def describe_change(change: MemoryChange) -> str:
    """One line for the model, e.g. ``replaced in preferences: X (was: Y)``; the entries kept
    beside it that look alike follow, so the model can choose ``replace`` if it meant one."""
    alike = ""
    if change.similar:
        listed = "; ".join(change.similar)
        alike = f". Kept as other facts, though similar: {listed} (use replace if it updates one)"
    if change.action == "added":
        return f"added to {change.section}: {change.new}{alike}"
    if change.action == "replaced":
        return f"replaced in {change.section}: {change.new} (was: {change.old}){alike}"
    if change.action == "removed":
        return f"removed from {change.section}: {change.old}"
    return f"unchanged: {change.section} already has: {change.new}"


def _language(text: str) -> str:
    """The language of a refusal about ``text``: Chinese for text with Chinese in it."""
    return "zh" if _HAN.search(text) else "en"


def people_said(log: JsonlLog) -> Callable[[], str]:
    """What the people in ``log``'s session said (their messages, oldest first), read when
    called: the transcript an entry is judged against."""

    def said() -> str:
        return "\n".join(
            e.text for e in log.iter_events() if e.kind == EventKind.MESSAGE and e.from_person
        )

    return said


def memory_tool(
    memory: MemoryFile,
    *,
    source: str = "",
    heard: Callable[[], str] | None = None,
    language: str | None = None,
) -> Tool:
    """The ``memory`` tool bound to one MEMORY.md (one employee x one user); ``source`` (the
    session) is recorded with each entry it writes. ``heard``: what people said in the
    session (see :func:`people_said`); without it entries are not judged against a
    transcript. ``language``: of the refusal reasons people read (else the entry's)."""

    def refusal(entry: str) -> Refusal | None:
        # The file's format first (one exact line, an InputError), then what it says.
        return judge(clean_entry(entry), heard=heard, language=language or _language(entry))

    def apply(args: MemoryArgs) -> MemoryChange | Refusal | str:
        """The change made, the gate's refusal, or why the arguments cannot work."""
        if args.action == "remove":
            if not args.old:
                return "remove needs `old`: the entry to remove (its text or part of it)."
            return memory.remove(args.section, args.old)
        if not args.content:
            return f"{args.action} needs `content`: the new entry, one short line."
        if refused := refusal(args.content):
            return refused
        if args.action == "add":
            return memory.add(args.section, args.content, source=source)
        if not args.old:
            return (
                "replace needs `old`: the entry to replace (its text or part of it). "
                "To add a new entry use action=add."
            )
        return memory.replace(args.section, args.old, args.content, source=source)

    async def run(args: MemoryArgs) -> ToolResult:
        try:
            # A thread, so that waiting for another process's lock and fsync never stall the
            # event loop.
            outcome = await asyncio.to_thread(apply, args)
        except (InputError, MemoryCapExceeded) as exc:
            return ToolResult(False, f"Error: {exc}")
        if isinstance(outcome, str):
            return ToolResult(False, f"Error: {outcome}")
        if isinstance(outcome, Refusal):
            lang = language or _language(args.content or "")
            reason = REFUSED(lang, entry=args.content, reason=outcome.reason)
            said = {"what": "memory", "used": NOT_STORED(lang), "reason": reason}
            tip = "Save only lasting facts a person stated, in their words, or nothing."
            return ToolResult(False, f"Error: not stored: {outcome.reason}. {tip}", said)
        return ToolResult(True, describe_change(outcome))

    return Tool("memory", _DESCRIPTION.format(cap=memory.cap), MemoryArgs, run)


def remember_stated(memory: MemoryFile, text: str, *, source: str = "") -> list[MemoryChange]:
    """Store the literal self-statements in ``text`` (see :func:`stated_facts`) in ``memory``.

    The changes that did something; an entry already there is left as it is. For a model that
    did not call the memory tool on such a statement (a weak one, or a server that ignores
    tools); the caller records that this rule stood in.
    """
    facts = [f for f in stated_facts(text) if judge(f.entry) is None]
    changes = [memory.add(f.section, f.entry, source=source) for f in facts]
    return [c for c in changes if c.action != "unchanged"]


def rule_fallback(
    memory: MemoryFile, change: MemoryChange, person: str, language: str
) -> dict[str, str]:
    """The ``fallback`` event's content for a ``change`` the statement rule made in
    ``memory`` because ``person`` stated it and the model did not call the memory tool;
    written in ``language`` (the session's), the section named by its title in that language."""
    section = memory.titles_in(language)[change.section]
    phrase = RULE_REPLACED if change.action == "replaced" else RULE_ADDED
    used = phrase(language, section=section, entry=change.new, old=change.old)
    return {"what": "memory", "used": used, "reason": RULE_REASON(language, person=person)}
