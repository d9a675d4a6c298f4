"""Assemble one turn's context: role card, announcement, SOP step, MEMORY.md of the people
present (as far as they may see it), HISTORY.md within its budget, and the last N messages.

Nothing else from the past is sent, so the prompt stays the same size however long the
session runs (the last messages are read from the end of the log, not the whole file).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from framework.errors import InputError, StaffroomError
from framework.extensions.prompt_blocks import BlockProblem, PromptScope
from framework.extensions.sink import EventSink
from framework.language import language_of
from framework.memory.memory_file import MemoryDoc
from framework.models.brief import TurnBrief, attach_brief
from framework.models.quiet import quiet_items
from framework.names import is_name
from framework.phrases import Phrase
from framework.runtime.prompt_budget import Budget, estimate_tokens, fit_messages, make_budget
from framework.sessions.events import Event, EventKind
from framework.sessions.keys import Channel
from framework.specs.step import StepState
from framework.statements import preferred_language

if TYPE_CHECKING:
    from framework.runtime.deps import RoomDeps

AUTHOR_KEY = "staffroom_author"
MAX_SERVED = 3
"""At most this many people's MEMORY.md go into one prompt (the latest speakers)."""
DELIVERED_FROM = Phrase(
    en="{author} (delivered by schedule {schedule} from {origin})",
    zh="{author}（定时任务 {schedule} 从 {origin} 投递）",
)
"""Who said a message a schedule delivered here from another session, as a prompt shows it."""


def recent_events(events: list[Event], limit: int) -> list[Event]:
    """The last ``limit`` chat messages among ``events``."""
    return [e for e in events if e.kind == EventKind.MESSAGE][-limit:] if limit > 0 else []


def recent_messages(events: list[Event], employee: str, limit: int) -> list[BaseMessage]:
    """The last ``limit`` chat messages, from ``employee``'s point of view."""
    chat = recent_events(events, limit)
    out: list[BaseMessage] = []
    for event in chat:
        delivered = event.meta.get("delivered")
        if event.author == employee and not isinstance(delivered, dict):
            out.append(AIMessage(content=event.text))
        else:
            # Others (people and colleagues) speak as "user" turns, prefixed with their name
            # so the model knows who said what; the author is also kept for the simulator.
            # A delivered message (even the employee's own words, said in another session)
            # is a report posted here, not a turn of this conversation: it says so.
            who = event.author
            if isinstance(delivered, dict):
                origin = str(delivered.get("from") or "-")
                language = "en" if language_of(event.text, "zh") == "en" else "zh"
                schedule = str(delivered.get("schedule", ""))
                who = DELIVERED_FROM(language, author=who, schedule=schedule, origin=origin)
            out.append(
                HumanMessage(
                    content=f"{who}: {event.text}",
                    additional_kwargs={AUTHOR_KEY: event.author},
                )
            )
    return out


@dataclass(frozen=True, slots=True)
class MemoryProblem:
    """A MEMORY.md that could not enter the prompt as it is; the turn goes on without it."""

    user: str
    path: Path
    used: str
    """What the prompt got instead, e.g. ``left out of pm's prompt``."""
    error: StaffroomError


@dataclass(frozen=True, slots=True)
class Remembered:
    """What the employee remembers for this turn: MEMORY.md per person, and HISTORY.md."""

    users: list[str] = field(default_factory=list)
    """People served this turn, the latest speaker first."""
    memories: dict[str, MemoryDoc] = field(default_factory=dict)
    history: str = ""
    said: str = ""
    """The person's message this turn answers ("" when the latest message is not a person's,
    or when that person's MEMORY.md refuses writes: the statement rule could not store it)."""
    problems: list[MemoryProblem] = field(default_factory=list)
    """MEMORY.md files left out or read with U+FFFD (see :func:`report_memory_problems`)."""


def remember(deps: RoomDeps, employee: str, events: list[Event]) -> Remembered:
    """Load MEMORY.md for each person speaking in the window (DM: the user) and HISTORY.md."""
    humans = deps.plan.humans
    speakers = [
        e.author
        for e in reversed(events)
        # A name written before names were checked (a log from older code) is skipped, never
        # turned into a path.
        if e.kind == EventKind.MESSAGE and e.from_person and is_name(e.author)
    ]
    users = list(dict.fromkeys(speakers))[:MAX_SERVED] or humans[:1]
    # A room shows a person's memory whole only when that person is the only one there;
    # with others present, only the sections the person chose to share (none by default).
    alone = deps.key.channel == Channel.DM or set(humans) | set(speakers) == set(users[:1])
    memories: dict[str, MemoryDoc] = {}
    problems: list[MemoryProblem] = []
    for user in users:
        memories[user] = _visible(deps, employee, user, alone=alone, problems=problems)
    history = deps.memory.history(deps.key).recent(deps.settings.history_budget)
    latest = next((e for e in reversed(events) if e.kind == EventKind.MESSAGE), None)
    said = latest.text if latest is not None and latest.from_person else ""
    if any(problem.user == users[0] for problem in problems):
        said = ""  # the statement rule would write into a MEMORY.md that refuses writes
    return Remembered(users, memories, history, said, problems)


def _visible(
    deps: RoomDeps, employee: str, user: str, *, alone: bool, problems: list[MemoryProblem]
) -> MemoryDoc:
    """What of ``user``'s MEMORY.md this prompt may show; a broken file never stops a turn."""
    memory = deps.memory.memory(employee, user)
    try:
        doc = memory.read()
    except StaffroomError as exc:  # a folder, no permission, a failing disk
        problems.append(MemoryProblem(user, memory.path, f"left out of {employee}'s prompt", exc))
        return MemoryDoc()
    if doc.write_refusal is not None:  # not UTF-8: shown as read, never written back
        used = f"read with U+FFFD for {employee}'s prompt"
        problems.append(MemoryProblem(user, memory.path, used, doc.write_refusal))
    if alone:
        return doc
    shared = deps.memory.shared_sections(employee, user)
    sections = {sid: (entries if sid in shared else []) for sid, entries in doc.sections.items()}
    return MemoryDoc(sections, doc.warnings, doc.write_refusal)


def report_memory_problems(
    sink: EventSink, problems: list[MemoryProblem], *, answering: str = ""
) -> None:
    """Record each broken MEMORY.md as a ``fallback`` event (streamed by ``sink``).

    ``answering`` is the id of the person's message being answered: the event id hashes it
    with the problem and the file's state, so each message a person posts hears of the
    problem once, not every turn of a room's SOP, and a re-run turn says nothing twice.
    """
    if not problems:
        return
    for problem in problems:
        exc = problem.error
        reason = f"{exc.file}: {exc.message}" if isinstance(exc, InputError) else str(exc)
        if isinstance(exc, InputError) and exc.fix:
            reason += f"; fix: {exc.fix}"
        try:
            st = os.stat(problem.path)
            state = f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"
        except OSError:
            state = ""
        said = f"{answering}\n{problem.path}\n{reason}\n{state}"
        digest = hashlib.sha256(said.encode()).hexdigest()
        content = {"what": "memory", "used": problem.used, "reason": reason}
        sink.emit(
            EventKind.FALLBACK,
            "system",
            content,
            id=f"memory-{digest[:16]}",
            meta={"user": problem.user, "file": str(problem.path)},
        )


def system_prompt(
    deps: RoomDeps,
    *,
    employee: str,
    why: str,
    step: StepState | None,
    remembered: Remembered | None = None,
    blocks: list[dict[str, str]] | None = None,
) -> str:
    """Render the employee's system prompt (their own template if the card names one).

    ``blocks``: the registered prompt blocks for this turn (``prompt_blocks.py``)."""
    plan = deps.plan
    card = plan.employees[employee]
    remembered = remembered or Remembered()
    override = None
    if card.prompt_template:
        override = Path(card.source).parent / card.prompt_template
    memory_blocks = [
        {"user": user, "text": capped(render_memory(doc), deps.settings.memory_cap, user)}
        for user, doc in remembered.memories.items()
        if any(doc.sections.values())
    ]
    context = {
        "card": card,
        "announcement": plan.announcement,
        "participants": list(plan.employees.values()),
        "humans": plan.humans,
        "step": step,
        "why": why,
        "tools": deps.tools.names(employee),
        "memories": memory_blocks,
        "history": remembered.history,
        "blocks": blocks or [],
    }
    return deps.renderer.render(
        "employee_system.j2", context, language=plan.prompt_language(employee), override=override
    )


def capped(text: str, cap: int, user: str) -> str:
    """A MEMORY.md's prompt text within its cap: a hand-edited file may have grown past it."""
    if len(text) <= cap:
        return text
    return (
        text[:cap] + f"\n[… {len(text) - cap} characters over the {cap}-character cap cut; "
        f"`staffroom memory <employee> --user {user}` shows the whole file]"
    )


def render_memory(doc: MemoryDoc) -> str:
    """A MEMORY.md's entries as prompt text (section id headers, one entry a line)."""
    parts = [f"[{sid}]\n" + "\n".join(entries) for sid, entries in doc.sections.items() if entries]
    return "\n".join(parts)


def _block_id(answering: Event | None, problem: BlockProblem) -> str:
    # Once per person's message and problem: an SOP's many turns say it once.
    said = f"{answering.id if answering else ''}\n{problem.name}\n{problem.reason}"
    return f"block-{hashlib.sha256(said.encode()).hexdigest()[:16]}"


def turn_budget(deps: RoomDeps, employee: str) -> Budget:
    """The token budget of ``employee``'s prompts (from its model's window and cap)."""
    profile = deps.models.profiles[employee]
    return make_budget(
        profile.input_budget,
        system_share=deps.settings.system_share,
        message_tokens=deps.settings.message_budget,
    )


def _fit_history(prompt: str, history: str, system_budget: int) -> str | None:
    """HISTORY.md cut (oldest lines first) so the prompt fits; None when it already does."""
    over = estimate_tokens(prompt) - system_budget
    if over <= 0 or not history:
        return None
    keep: list[str] = []
    room = estimate_tokens(history) - over
    for line in history.splitlines():  # newest first
        room -= estimate_tokens(line) + 1
        if room < 0:
            break
        keep.append(line)
    return "\n".join(keep)


def build_messages(
    deps: RoomDeps, sink: EventSink, *, employee: str, why: str, step: StepState | None
) -> tuple[list[BaseMessage], Remembered]:
    """System prompt (with the structured brief) followed by the recent messages, in budget.

    Nothing else from the past is sent: the prompt is bounded by the role card, the capped
    MEMORY.md files, HISTORY.md within its budget and the last ``recent_turns`` messages; and
    in tokens by the model's window (:func:`turn_budget`): HISTORY.md gives way first when the
    instructions are too long, each earlier message is cut to the per-message budget with a
    pointer to its full text, and the oldest messages are dropped until the whole fits.
    """
    settings = deps.plan.settings
    card = deps.plan.employees[employee]
    # Tool events sit between messages, so read a few times the window from the end.
    events = deps.log.tail(settings.recent_turns * 4 + 8)
    history = recent_messages(events, employee, settings.recent_turns)
    pointers = {
        i: f"full text: event {e.id} in {deps.key} (staffroom history {deps.key} --json)"
        for i, e in enumerate(recent_events(events, settings.recent_turns), start=1)
    }
    remembered = remember(deps, employee, events)
    human = next(
        (e for e in reversed(events) if e.kind == EventKind.MESSAGE and e.from_person), None
    )
    report_memory_problems(sink, remembered.problems, answering=human.id if human else "")
    last_human = human.text if human else ""
    current = remembered.memories.get(remembered.users[0]) if remembered.users else None
    preferences = current.sections.get("preferences", []) if current else []
    # People set the language: a stated preference, else their last message, else the
    # announcement they wrote.
    language = preferred_language(preferences) or language_of(
        last_human or deps.plan.scenario.announcement.text, deps.plan.prompt_language(employee)
    )
    brief = TurnBrief(
        purpose="turn",
        employee=employee,
        display_name=card.display_name,
        role=card.role,
        language=language,
        why=why,
        humans=deps.plan.humans,
        step=step,
        memory={sid: list(v) for sid, v in current.sections.items()} if current else {},
    )
    if human is not None and (quiet := quiet_items(human.meta)) is not None:
        brief["quiet"] = quiet
    user = remembered.users[0] if remembered.users else deps.plan.humans[0]
    scope = PromptScope(deps.key, employee, user, deps.plan.scenario.id, settings.task_type)
    blocks, left_out = deps.extensions.blocks.render(scope, deps.plan.prompt_language(employee))
    for problem in left_out:
        content = {
            "what": "prompt",
            "used": f"{employee}'s prompt without the {problem.name} block",
        }
        content["reason"] = problem.reason
        sink.emit(EventKind.FALLBACK, "system", content, id=_block_id(human, problem))
    budget = turn_budget(deps, employee)
    prompt = system_prompt(
        deps, employee=employee, why=why, step=step, remembered=remembered, blocks=blocks
    )
    trimmed = _fit_history(prompt, remembered.history, budget.system)
    if trimmed is not None:
        remembered = Remembered(
            remembered.users, remembered.memories, trimmed, remembered.said, remembered.problems
        )
        prompt = system_prompt(
            deps, employee=employee, why=why, step=step, remembered=remembered, blocks=blocks
        )
    messages = [attach_brief(SystemMessage(content=prompt), brief), *history]
    return fit_messages(messages, budget, pointers), remembered
