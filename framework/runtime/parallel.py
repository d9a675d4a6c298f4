"""Parallel SOP steps: one LangGraph ``Send`` per speaker, run at once, then joined.

A step marked ``parallel`` with several speakers fans out to ``lane`` tasks in one
superstep (their model calls overlap); ``join`` runs once they have all finished, counts
their turns and moves the SOP on (or pauses for a person when the step waits for input).
Each lane's events get their own id prefix, so a re-run after a crash adds nothing twice.
"""

from __future__ import annotations

from typing import TypedDict

from langgraph.runtime import Runtime
from langgraph.types import Command, Send

from framework.runtime.deps import RoomDeps
from framework.runtime.state import (
    Pick,
    RoomState,
    RoomUpdate,
    RouteTo,
    TurnTo,
    Why,
    at_index,
    make_pick,
    next_index,
)
from framework.runtime.turn import run_turn
from framework.specs.step import StepState


class LanePayload(TypedDict):
    """What a ``Send`` hands one lane."""

    pick: Pick
    step: StepState
    prefix: str


def fan_out(state: RoomState, step_index: int, update: RoomUpdate) -> Command[RouteTo]:
    """Send every speaker of a parallel step to its own lane."""
    step = state["steps"][step_index]
    sends = [
        Send(
            "lane",
            LanePayload(
                pick=make_pick(employee, Why.SOP_STEP, step_index),
                step=step,
                prefix=f"{state['epoch']}-t{state['turns']:04d}-p{lane}",
            ),
        )
        for lane, employee in enumerate(step["speakers"])
    ]
    cleared: RoomUpdate = {**update, "lanes": None}  # the join counts this step's lanes only
    return Command(goto=sends, update=cleared)


async def lane(payload: LanePayload, runtime: Runtime[RoomDeps]) -> RoomUpdate:
    """One speaker's turn of a parallel step."""
    prefix = payload["prefix"]
    result = await run_turn(
        runtime.context,
        runtime.context.sink().streaming_to(runtime.stream_writer),
        pick=payload["pick"],
        step=payload["step"],
        prefix=prefix,
        parallel_step=prefix.rpartition("-p")[0],  # the lanes of one step share file claims
    )
    lane_result = {"employee": payload["pick"]["employee"], "ok": result.ok, "error": result.error}
    return {"lanes": [lane_result]}


async def join(state: RoomState, runtime: Runtime[RoomDeps]) -> Command[TurnTo]:
    """All lanes are done: count their turns, advance the step, wait if the step says so."""
    lanes = state.get("lanes") or []
    step_index = next_index(state)
    step = state["steps"][step_index]
    ok = all(entry["ok"] for entry in lanes)
    update: RoomUpdate = {
        "turns": state["turns"] + len(lanes),
        "run_turns": state["run_turns"] + len(lanes),
        "last_speaker": lanes[-1]["employee"] if lanes else state.get("last_speaker"),
        "last_error": None
        if ok
        else next((e.get("error") for e in lanes if e.get("error")), None) or "model_error",
        "lanes": None,
    }
    if not ok:
        return Command(goto="human", update=update)  # the step is retried after a person answers
    update |= at_index(step_index + 1)
    return Command(goto="human" if step["waits_for_input"] else "route", update=update)
