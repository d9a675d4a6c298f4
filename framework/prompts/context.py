"""Assemble one turn's context: role card, announcement, SOP step, and the last N messages.

Nothing else from the past is sent, so the prompt stays the same size however long the
session runs (the last messages are read from the end of the log, not the whole file).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from framework.language import language_of
from framework.models.brief import TurnBrief, attach_brief
from framework.sessions.events import Event, EventKind

if TYPE_CHECKING:
    from framework.runtime.deps import RoomDeps

AUTHOR_KEY = "staffroom_author"


def recent_messages(events: list[Event], employee: str, limit: int) -> list[BaseMessage]:
    """The last ``limit`` chat messages, from ``employee``'s point of view."""
    chat = [e for e in events if e.kind == EventKind.MESSAGE][-limit:] if limit > 0 else []
    out: list[BaseMessage] = []
    for event in chat:
        if event.author == employee:
            out.append(AIMessage(content=event.text))
        else:
            # Others (people and colleagues) speak as "user" turns, prefixed with their name
            # so the model knows who said what; the author is also kept for the simulator.
            out.append(
                HumanMessage(
                    content=f"{event.author}: {event.text}",
                    additional_kwargs={AUTHOR_KEY: event.author},
                )
            )
    return out


def system_prompt(deps: RoomDeps, *, employee: str, why: str, step: dict[str, Any] | None) -> str:
    """Render the employee's system prompt (their own template if the card names one)."""
    plan = deps.plan
    card = plan.employees[employee]
    override = None
    if card.prompt_template:
        override = Path(card.source).parent / card.prompt_template
    context = {
        "card": card,
        "announcement": plan.announcement,
        "participants": list(plan.employees.values()),
        "humans": plan.scenario.humans,
        "step": step,
        "why": why,
        "tools": [t for t in card.tools if t in deps.tools],
    }
    return deps.renderer.render("employee_system.j2", context, override=override)


def build_messages(
    deps: RoomDeps, *, employee: str, why: str, step: dict[str, Any] | None
) -> list[BaseMessage]:
    """System prompt (with the structured brief) followed by the recent messages."""
    settings = deps.plan.scenario.settings
    card = deps.plan.employees[employee]
    # Tool events sit between messages, so read a few times the window from the end.
    events = deps.log.tail(settings.recent_turns * 4 + 8)
    history = recent_messages(events, employee, settings.recent_turns)
    last_human = next(
        (e.text for e in reversed(events) if e.kind == EventKind.MESSAGE and e.meta.get("human")),
        "",
    )
    brief = TurnBrief(
        purpose="turn",
        employee=employee,
        display_name=card.display_name,
        role=card.role,
        # People set the language: their last message, else the announcement they wrote.
        language=language_of(last_human or deps.plan.scenario.announcement.text, card.language),
        why=why,
        humans=list(deps.plan.scenario.humans),
        step={"n": step["n"], "do": step["do"], "tools": list(step["tools"])} if step else None,
    )
    prompt = system_prompt(deps, employee=employee, why=why, step=step)
    return [attach_brief(SystemMessage(content=prompt), brief), *history]
