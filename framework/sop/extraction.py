"""Path 1 of seed 000 §5.1: distil an SOP draft from a finished session.

Triggered when a person says "把这套做法记下来" / "save this as an SOP", or without being
asked when a task is reported done or a session ends (the rules: :mod:`.auto_extract`).
The draft holds the goal, the key steps in the order they happened (who did what), the
tools each step used and the fallbacks that were needed; it waits for review.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from framework.language import snippet
from framework.sessions.events import Event, EventKind, utc_now
from framework.sessions.payloads import ErrorPayload, StepPayload, ToolCallPayload, payload_of
from framework.sop.model import ChangeLogEntry, SopVersion, Status, Step

_SAVE = re.compile(
    r"把这套(?:做法|流程|方法)(?:记下来|存下来|沉淀下来)|记下这套(?:做法|流程)|"
    r"save (?:this|it) as an? sop|remember this (?:procedure|process|workflow)",
    re.IGNORECASE,
)


def is_save_request(text: str) -> bool:
    """Whether a person asks to keep the way of working as an SOP."""
    return bool(_SAVE.search(text))


def _first_sentence(text: str, limit: int = 60) -> str:
    flat = " ".join(text.replace("[simulated]", "").split())
    return snippet(re.split(r"(?<=[。！？.!?])\s*", flat, maxsplit=1)[0], limit)


ASKED = "从会话中提炼（用户要求记下这套做法）"
"""The change log's ``why`` of a draft a person asked for."""


def extract_draft(
    events: Sequence[Event],
    *,
    sop_id: str,
    version: int,
    scope: str,
    session: str,
    why: str = ASKED,
    by: str = "extraction",
) -> SopVersion | None:
    """An SOP draft from a session's events, or None when no employee did anything yet.

    One step per employee turn: the SOP step it served (when the room had one) or the
    request it answered, the tools it called, and a fallback when the turn hit an error.
    ``why`` and ``by`` go into the change log (a draft proposed without being asked says
    what proposed it).
    """
    steps: list[Step] = []
    request = ""
    goal = ""
    tools: list[str] = []
    trouble: list[str] = []
    for event in events:
        if event.kind == EventKind.MESSAGE and event.from_person:
            if not is_save_request(event.text):
                request = _first_sentence(event.text)
                goal = goal or request
        elif isinstance(said := payload_of(event), StepPayload):
            request = said.do if said.do is not None else request
        elif isinstance(said, ToolCallPayload):
            name = str(said.name)
            if name not in tools and name != "memory":
                tools.append(name)
        elif isinstance(said, ErrorPayload):
            trouble.append(str(said.error))
        elif event.kind == EventKind.MESSAGE:
            do = request or _first_sentence(event.text)
            fallback = f"出错时（{', '.join(trouble)}）先说明再重试" if trouble else None
            step = Step((event.author,), do, tuple(tools), fallback)
            if not steps or steps[-1] != step:
                steps.append(step)
            tools, trouble = [], []
    if not steps:
        return None
    return SopVersion(
        sop_id=sop_id,
        version=version,
        goal=goal or steps[0].do,
        scope=scope,
        steps=tuple(steps),
        status=Status.DRAFT,
        change_log=(ChangeLogEntry(version, why, by, session),),
        created_at=utc_now(),
    )
