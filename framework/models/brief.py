"""The structured brief a turn hands its model next to the rendered prompt.

The runtime attaches it to the system message's ``additional_kwargs`` under
:data:`BRIEF_KEY`. Real providers ignore it (they send only the prompt text); the offline
simulator reads it instead of guessing from prompt wording, so changing a template never
changes what the simulator does.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from langchain_core.messages import BaseMessage, SystemMessage

from framework.specs.step import StepState

BRIEF_KEY = "staffroom_brief"


class TurnBrief(TypedDict, total=False):
    """What the employee is asked to do this turn."""

    purpose: Literal["turn", "select"]
    employee: str
    display_name: str
    role: str
    language: str
    why: str
    step: StepState | None
    """The SOP step being worked on, as the room stores it."""
    humans: list[str]
    """The people in the session (their messages are the ones to answer)."""
    memory: dict[str, list[str]]
    """MEMORY.md entries (by section id) about the person being served."""
    candidates: list[dict[str, str]]
    """For ``purpose="select"``: the employees a selector may pick (id, role, name)."""
    quiet: int
    """Only on a quiet scheduled fire: how many items its message lists to check (0: none);
    the employee may answer "nothing to report" (``framework/models/quiet.py``)."""


def attach_brief(message: SystemMessage, brief: TurnBrief) -> SystemMessage:
    """Return the system message carrying ``brief``."""
    kwargs: dict[str, Any] = dict(message.additional_kwargs)
    kwargs[BRIEF_KEY] = dict(brief)
    return SystemMessage(content=message.content, additional_kwargs=kwargs)


def find_brief(messages: list[BaseMessage]) -> TurnBrief:
    """The brief of the first message that has one (the system message, or the user message
    the instructions were folded into), or an empty brief."""
    for message in messages:
        if BRIEF_KEY in message.additional_kwargs:
            raw = message.additional_kwargs[BRIEF_KEY]
            if isinstance(raw, dict):
                return TurnBrief(**raw)  # type: ignore[typeddict-item]
    return TurnBrief()
