"""Replay a session from its JSONL: what each model saw of each tool result, in order.

A ``tool_result`` event keeps the raw output and what shaped the model's view of it (the
budget and the protected quotes); the view itself is a pure function of those, so it is
recomputed rather than stored twice. A turn's message keeps ``text_offsets``, the place in
its text where each tool call happened, so text and calls replay in their original order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from framework.sessions.events import Event, EventKind
from framework.sessions.payloads import ToolCallPayload, ToolResultPayload, payload_of
from framework.sessions.workspace import Workspace
from framework.tools.output import model_view


@dataclass(frozen=True, slots=True)
class ReplayedTurn:
    """One employee turn rebuilt from the log."""

    author: str
    segments: list[tuple[str, Any]]
    """In original order: ``("text", str)``, ``("call", {name, args})``, ``("result", shown)``."""


def replay_turns(events: list[Event], workspace: Workspace) -> list[ReplayedTurn]:
    """Rebuild each employee turn: its text split at ``text_offsets`` around its tool calls."""
    turns: list[ReplayedTurn] = []
    pending: list[tuple[str, Any]] = []
    last_call_id = ""
    for event in events:
        said = payload_of(event)
        if isinstance(said, ToolCallPayload):
            last_call_id = event.id
            pending.append(("call", {"name": said.name, "args": said.args}))
        elif isinstance(said, ToolResultPayload) and said.has_budget:
            # Results logged before the output budget was logged cannot be replayed exactly.
            pending.append(("result", model_view(said.raw, last_call_id, workspace)))
        elif event.kind == EventKind.MESSAGE and not event.from_person:
            if "delivered" in event.meta:  # a schedule's delivery from elsewhere: no turn here
                continue
            turns.append(ReplayedTurn(event.author, _interleave(event, pending)))
            pending = []
    return turns


def _interleave(message: Event, tool_segments: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    text = message.text
    offsets = message.text_offsets or []
    out: list[tuple[str, Any]] = []
    cursor = 0
    calls = iter(tool_segments)
    for offset in offsets:
        if offset > cursor:
            out.append(("text", text[cursor:offset]))
            cursor = offset
        # A call and its result stay together at the offset where the call was made.
        for segment in calls:
            out.append(segment)
            if segment[0] == "result":
                break
    if cursor < len(text) or not out:
        out.append(("text", text[cursor:]))
    out.extend(calls)
    return out
