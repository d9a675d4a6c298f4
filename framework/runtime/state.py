"""The room's control state, checkpointed by LangGraph after every node."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict


def merge_lanes(
    old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Reducer for parallel lanes: results add up; ``None`` clears them for the next step."""
    if new is None:
        return []
    return [*(old or []), *new]


class RoomState(TypedDict, total=False):
    """Control state only; the conversation itself lives in the session's JSONL log."""

    epoch: str
    """Random id fixed at room entry; prefixes deterministic event ids so a re-run node
    re-appends the same ids (skipped) and a room rebuilt from scratch never collides."""
    entered: bool
    scenario: str
    sop: str | None
    """``id@version`` the room runs on."""
    steps: list[dict[str, Any]]
    """Snapshot of the SOP steps taken at entry."""
    step: int
    """Index of the next SOP step."""
    phase: str
    """``sop`` (following steps), ``wrapup`` (serving deferred mentions), ``open`` (free chat)."""
    turns: int
    """Employee turns taken in this room so far."""
    run_turns: int
    """Employee turns since the last human input, capped by ``max_turns``."""
    queue: list[dict[str, Any]]
    """Speakers picked by mention or selector, waiting for their turn."""
    deferred: list[dict[str, Any]]
    """Mentions made while the SOP was running; served when it completes."""
    inbox: list[dict[str, Any]]
    """Human messages not yet routed (set by the caller's input)."""
    consumed: list[str]
    """Ids of recent human messages already routed, so a redelivered message is ignored."""
    current: dict[str, Any] | None
    last_speaker: str | None
    last_error: str | bool | None
    """Why the last turn failed (the room then waits for a person or a retry)."""
    lanes: Annotated[list[dict[str, Any]], merge_lanes]
    """Results of the lanes of a parallel step, joined by the ``join`` node."""
    stop_reason: str | None


def entry_state(
    epoch: str, scenario: str | None, sop: str | None, steps: list[Any]
) -> dict[str, Any]:
    """The control state a room has right after entry (``enter``, and a rebuild from a log)."""
    return {
        "epoch": epoch,
        "entered": True,
        "scenario": scenario,
        "sop": sop,
        "steps": steps,
        "step": 0,
        "phase": "sop" if steps else "open",
        "turns": 0,
        "run_turns": 0,
        "queue": [],
        "deferred": [],
        "consumed": [],
        "last_speaker": None,
    }
