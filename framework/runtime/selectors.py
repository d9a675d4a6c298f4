"""Selectors pick who answers when neither the SOP nor an @mention decides.

A selector can never loop forever or pick nobody: a model selector whose reply names no
participant (or fails) falls back to round robin, and the fallback is recorded.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from framework.models.brief import TurnBrief, attach_brief
from framework.runtime.deps import RoomDeps
from framework.runtime.routing import pick_from_reply, round_robin


async def select_speaker(
    deps: RoomDeps, *, last_speaker: str | None, last_text: str
) -> tuple[str, str | None]:
    """``(employee id, note)`` for the next speaker; the note explains a fallback."""
    scenario = deps.plan.scenario
    participants = list(scenario.participants)
    fallback = round_robin(participants, last_speaker)
    if (
        scenario.settings.selector != "model"
        or deps.selector_model is None
        or len(participants) == 1
    ):
        return fallback, None
    cards = deps.plan.employees
    brief = TurnBrief(
        purpose="select",
        candidates=[
            {"id": p, "role": cards[p].role, "name": cards[p].display_name} for p in participants
        ],
    )
    roster = "\n".join(f"- {p}: {cards[p].display_name}, {cards[p].role}" for p in participants)
    system = SystemMessage(
        content=f"Pick who should answer the last message. Candidates:\n{roster}\n"
        "Reply with the candidate's id only."
    )
    try:
        reply = await deps.selector_model.ainvoke(
            [attach_brief(system, brief), HumanMessage(content=last_text)]
        )
    except Exception as exc:  # a failing selector model must not stop the room
        return fallback, f"selector model failed ({type(exc).__name__}); round robin"
    chosen = pick_from_reply(str(reply.content), participants)
    if chosen is None:
        return fallback, "selector reply named nobody; round robin"
    return chosen, None
