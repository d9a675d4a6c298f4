"""The room's control state, checkpointed by LangGraph after every node."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from framework.specs.step import StepState

CONSUMED_WINDOW = 50
"""How many recently routed human message ids the checkpoint keeps (``consumed``)."""


class Why(StrEnum):
    """Why an employee speaks (a pick's ``why``, and its message's ``meta.why``)."""

    SOP_STEP = "sop_step"
    """Its SOP step is due."""
    MENTION = "mention"
    """A person @mentioned it."""
    SELECTOR = "selector"
    """The selector (a model, or round robin) chose it to answer."""
    DIRECT = "direct"
    """It is the only employee present (a DM)."""


class Pick(TypedDict):
    """Who speaks next and why: queued by routing, taken by a turn.

    ``why`` holds a :class:`Why` value as a plain string, so checkpoints stay plain data.
    """

    employee: str
    why: str
    step: int | None
    """With ``why == "sop_step"``: the 0-based index of its step in the state's ``steps``
    (named ``step`` in stored checkpoints; read it with :func:`pick_index`)."""
    note: NotRequired[str | None]
    """Why the pick was made another way (a round robin standing in for the selector)."""


class Routed(TypedDict):
    """A person's message as the room routes it (an ``inbox`` item, and what message hooks
    get): the stored event's id, its author and text."""

    id: str
    author: str
    content: str
    opening: NotRequired[bool]
    """Set on the room's first message given at its start: its input, not feedback."""


def make_pick(
    employee: str, why: Why, step_index: int | None = None, note: str | None = None
) -> Pick:
    """A pick (with ``note`` only when there is one, as older checkpoints have it)."""
    pick = Pick(employee=employee, why=why.value, step=step_index)
    if note is not None:
        pick["note"] = note
    return pick


def pick_index(pick: Pick) -> int | None:
    """The 0-based index of the SOP step ``pick`` works on; None when it is no step's."""
    return pick["step"] if pick["why"] == Why.SOP_STEP else None


def merge_lanes(
    old: list[dict[str, Any]] | None, new: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """Reducer for parallel lanes: results add up; ``None`` clears them for the next step."""
    if new is None:
        return []
    return [*(old or []), *new]


class _Control(TypedDict, total=False):
    """The keys of the room's control state, each with its type, but ``lanes``:
    :class:`RoomState` is them, :class:`RoomUpdate` some of them."""

    epoch: str
    """Random id fixed at room entry; prefixes deterministic event ids so a re-run node
    re-appends the same ids (skipped) and a room rebuilt from scratch never collides."""
    entered: bool
    scenario: str | None
    """The scenario's id (None for a room rebuilt from a log whose entry did not say)."""
    sop: str | None
    """``id@version`` the room runs on."""
    steps: list[StepState]
    """Snapshot of the SOP steps taken at entry."""
    step: int
    """0-based index of the next SOP step, the count of steps done (kept as ``step`` so old
    checkpoints resume): read with :func:`next_index`, written with :func:`at_index`."""
    phase: str
    """``sop`` (following steps), ``wrapup`` (serving deferred mentions), ``open`` (free chat)."""
    turns: int
    """Employee turns taken in this room so far."""
    run_turns: int
    """Employee turns since the last human input, capped by ``max_turns``."""
    queue: list[Pick]
    """Speakers picked by mention or selector, waiting for their turn."""
    deferred: list[Pick]
    """Mentions made while the SOP was running; served when it completes."""
    inbox: list[Routed]
    """Human messages not yet routed (set by the caller's input)."""
    consumed: list[str]
    """Ids of recent human messages already routed, so a redelivered message is ignored."""
    current: Pick | None
    last_speaker: str | None
    last_error: str | bool | None
    """Why the last turn failed (the room then waits for a person or a retry)."""
    stop_reason: str | None
    interrupted: bool
    """The run was stopped between turns for a newer message (the pause says so)."""
    dropped: list[str]
    """Who would have spoken next in the stopped run (free chat only; SOP steps stay)."""


class RoomState(_Control, total=False):
    """Control state only; the conversation itself lives in the session's JSONL log."""

    lanes: Annotated[list[dict[str, Any]], merge_lanes]
    """Results of the lanes of a parallel step, joined by the ``join`` node."""


RouteTo = Literal["turn", "lane", "human", "__end__"]
"""Where the ``route`` node sends the room next (declared to the graph from this list)."""
TurnTo = Literal["route", "human", "__end__"]
"""Where a ``turn`` (or the ``join`` of a parallel step's lanes) goes next; the end only when
``route`` would end the run there anyway (``graph.turn``)."""


class RoomUpdate(_Control, total=False):
    """What a graph node writes: some of :class:`RoomState`'s keys, each with its type, so
    mypy checks every write (``tests/runtime`` holds the two key sets equal). Differs from
    the state only where a write means more than a value: ``lanes=None`` clears the lanes."""

    lanes: list[dict[str, Any]] | None


def next_index(state: Mapping[str, Any]) -> int:
    """The 0-based index of the SOP step to run next: the count of steps done."""
    return int(state.get("step", 0))


def at_index(index: int) -> RoomUpdate:
    """The update that makes step ``index`` (0-based) the next to run."""
    return {"step": index}


def entry_state(epoch: str, scenario: str | None, sop: str | None, steps: list[Any]) -> RoomUpdate:
    """The control state a room has right after entry (``enter``, and a rebuild from a log)."""
    return {
        "epoch": epoch,
        "entered": True,
        "scenario": scenario,
        "sop": sop,
        "steps": steps,
        **at_index(0),
        "phase": "sop" if steps else "open",
        "turns": 0,
        "run_turns": 0,
        "queue": [],
        "deferred": [],
        "consumed": [],
        "last_speaker": None,
    }
