"""The room as a LangGraph ``StateGraph``: enter -> route -> turn -> (human) -> route ... -> end.

A room that has entered starts each later run at ``route``: ``enter`` would do nothing there,
and each superstep costs a checkpoint write (two round trips of a transaction on PostgreSQL).

``route`` decides who speaks: the SOP's steps first, then @mentions (made during the SOP,
they are served once it completes), then a selector. ``turn`` runs one employee turn.
``human`` pauses the room with ``interrupt`` until a person posts. Every node writes its
events with deterministic ids, so a node that re-runs after a crash adds nothing twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt

from framework.extensions.hooks import MessageRouted, RunEnded
from framework.extensions.sink import EventSink
from framework.runtime.deps import RoomContext, RoomDeps
from framework.runtime.parallel import LanePayload, fan_out, join, lane
from framework.runtime.recovery import snapshot
from framework.runtime.routing import is_stop, parse_mentions
from framework.runtime.selectors import select_speaker
from framework.runtime.state import (
    CONSUMED_WINDOW,
    Pick,
    RoomState,
    RoomUpdate,
    Routed,
    RouteTo,
    TurnTo,
    Why,
    at_index,
    entry_state,
    make_pick,
    next_index,
    pick_index,
)
from framework.runtime.turn import run_turn
from framework.sessions.entry import entry_meta, is_entry
from framework.sessions.events import EventKind, new_event_id
from framework.sop.trials import runs_trial
from framework.specs.project import source_in_project

RoomGraph = CompiledStateGraph[RoomState, RoomDeps, RoomState, RoomState]

_END: Final = "__end__"
"""LangGraph's ``END``, spelt as a literal so the gotos below are checked types."""


def _sink(runtime: Runtime[RoomDeps]) -> EventSink:
    """The node's event sink: the room's log, streamed to whoever drives the run."""
    return runtime.context.sink().streaming_to(runtime.stream_writer)


def _epoch(deps: RoomDeps) -> str:
    # Reuse the epoch of an entry event that is the log's last line: that entry was written
    # by an enter node that crashed before its checkpoint. Otherwise start a fresh epoch, so
    # a room whose checkpoint was lost never collides with its old event ids.
    last = deps.log.tail(1)
    if last and is_entry(last[0]):
        return str(entry_meta(last[0]).epoch)
    return new_event_id()[-10:].lower()


async def enter(state: RoomState, runtime: Runtime[RoomDeps]) -> RoomUpdate:
    """Room entry: record the announcement (SOP slot filled) and snapshot the SOP steps."""
    if state.get("entered"):
        return {}
    deps = runtime.context
    plan = deps.plan
    epoch = _epoch(deps)
    content: dict[str, Any] = {
        "scenario": plan.scenario.id,
        # Relative to the project: logs and the server's streams name no folder outside it.
        "scenario_source": source_in_project(plan.scenario.source, deps.settings.project_dir),
        "title": plan.scenario.title,
        "announcement": plan.announcement,
        "sop": plan.sop_ref,
        "participants": plan.participants,
        "humans": plan.humans,
    }
    if plan.sop_trials:  # which side of a running SOP trial this room is on
        content["sop_trials"] = plan.sop_trials
    steps = plan.step_states()
    # The steps taken at entry go in the log too: a room whose checkpoint is lost is
    # rebuilt from its log (runtime/recovery.py), on the version it entered on.
    meta = {"entry": True, "epoch": epoch, "sop": plan.sop_ref, "steps": steps}
    meta["sop_trial"] = runs_trial(plan.sop_trials, plan.sop_ref)  # the viewer and CLI say so
    first_entry = not deps.log.has(f"{epoch}-entry")
    _sink(runtime).emit(EventKind.PLAN, "system", content, id=f"{epoch}-entry", meta=meta)
    if first_entry and plan.sop_ref:
        # Metrics count the room that ran on this version (once, even if entry is re-run).
        await deps.sops.store.record_reference(plan.sop_ref, str(deps.key), plan.humans[0])
    return entry_state(epoch, plan.scenario.id, plan.sop_ref, steps)


async def _finish(
    state: Mapping[str, Any], deps: RoomDeps, sink: EventSink, reason: str, id_suffix: str
) -> Command[RouteTo]:
    # The end of a run: hooks first (the SOP feedback: the group's outcome feeds the next
    # version), then the outcome event that closes it.
    end = RunEnded(id=str(state["epoch"]), reason=reason, state=state)
    await deps.extensions.hooks.run(end, RoomContext(deps, sink))
    content = {
        "reason": reason,
        "sop": state.get("sop"),
        "steps_done": next_index(state),
        "steps_total": len(state.get("steps", [])),
        "turns": state.get("turns", 0),
    }
    sink.emit(
        EventKind.OUTCOME,
        "system",
        content,
        id=f"{state['epoch']}-{id_suffix}",
        meta={"sop": state.get("sop")},
    )
    update: RoomUpdate = {
        "phase": "open",
        "queue": [],
        "deferred": [],
        "inbox": [],
        "stop_reason": reason,
    }
    return Command(goto=_END, update=update)


async def route(state: RoomState, runtime: Runtime[RoomDeps]) -> Command[RouteTo]:
    """Pick the next speaker, wait, or end (or pause for a newer message: double texting)."""
    control = runtime.context.control
    if control.interrupt and not state.get("inbox"):
        control.interrupt = False
        queue, phase = list(state["queue"]), state["phase"]
        if queue or phase != "open":
            return _interrupted(phase, queue, {"inbox": []})
    return await _route(state, runtime)


async def _route(state: RoomState, runtime: Runtime[RoomDeps]) -> Command[RouteTo]:
    deps, sink = runtime.context, _sink(runtime)
    settings = deps.plan.settings
    phase, queue, deferred = state["phase"], list(state["queue"]), list(state["deferred"])
    consumed, run_turns = list(state["consumed"]), state["run_turns"]
    update: RoomUpdate = {"inbox": []}
    for msg in state.get("inbox") or []:
        if msg["id"] in consumed:
            continue  # a redelivered message was already routed
        consumed = [*consumed, msg["id"]][-CONSUMED_WINDOW:]
        run_turns = 0
        routed = MessageRouted(
            id=str(msg["id"]), author=str(msg["author"]), content=str(msg["content"]), message=msg
        )
        await deps.extensions.hooks.run(routed, RoomContext(deps, sink))
        if is_stop(msg["content"], settings.stop_words):
            return await _finish({**state, **update}, deps, sink, "stop_word", f"stop-{msg['id']}")
        picks = [
            make_pick(e, Why.MENTION) for e in parse_mentions(msg["content"], deps.plan.employees)
        ]
        if phase == "sop":
            deferred += [p for p in picks if p not in deferred]
        else:
            queue += picks or await _unmentioned(state, deps, sink, msg)
    update |= {"consumed": consumed, "run_turns": run_turns, "queue": queue, "deferred": deferred}
    merged = {**state, **update}
    if run_turns >= settings.max_turns:
        return await _finish(merged, deps, sink, "max_turns", f"t{state['turns']:04d}-max")
    if not queue and phase == "sop" and next_index(state) < len(state["steps"]):
        index = next_index(state)
        step = state["steps"][index]
        sink.emit(
            EventKind.SOP_STEP,
            "system",
            step,
            id=f"{state['epoch']}-t{state['turns']:04d}-step",
            meta={"sop": state.get("sop"), "step": step["n"]},
        )
        if step.get("parallel") and len(step["speakers"]) > 1:
            return fan_out(state, index, update)
        queue = [make_pick(e, Why.SOP_STEP, index) for e in step["speakers"]]
    elif not queue and phase == "sop":
        update["phase"] = phase = "wrapup"
        queue, update["deferred"] = deferred, []
    if queue:
        update |= {"current": queue[0], "queue": queue[1:]}
        return Command(goto="turn", update=update)
    if phase == "wrapup":
        return await _finish(merged, deps, sink, "sop_complete", "sop-complete")
    return Command(goto=_END, update=update)


async def _unmentioned(
    state: RoomState, deps: RoomDeps, sink: EventSink, msg: Routed
) -> list[Pick]:
    """Who answers a free-chat message that mentions nobody."""
    if len(deps.plan.employees) == 1:
        # A DM (or a one-employee room): nobody to choose between.
        return [make_pick(deps.plan.participants[0], Why.DIRECT)]
    if deps.plan.settings.selector == "none":
        return []  # employees speak when @mentioned (a busy group chat)
    chosen, note = await select_speaker(
        deps, last_speaker=state.get("last_speaker"), last_text=msg["content"]
    )
    if note:  # round robin stood in for the selector model: record why
        used = {"what": "selector", "used": "round_robin", "reason": note}
        sink.emit(EventKind.FALLBACK, "system", used, id=f"{state['epoch']}-{msg['id']}-select")
        note = f"round robin: {note}"
    return [make_pick(chosen, Why.SELECTOR, note=note)]


def _interrupted(phase: str, queue: list[Pick], update: RoomUpdate) -> Command[RouteTo]:
    """Pause between turns for a newer message (double texting: interrupt). Picks that
    answered the older message go; SOP steps (and deferred mentions) stay where they are."""
    keep = phase != "open"
    dropped = [] if keep else [p["employee"] for p in queue]
    update |= {"queue": queue if keep else [], "interrupted": True, "dropped": dropped}
    return Command(goto="human", update=update)


async def turn(state: RoomState, runtime: Runtime[RoomDeps]) -> Command[TurnTo]:
    """One employee turn, then back to routing (or to a human when the step waits)."""
    pick: Pick | None = state["current"]
    assert pick is not None, "route sets the pick before every turn"
    index = pick_index(pick)
    step = state["steps"][index] if index is not None else None
    turns = state["turns"]
    result = await run_turn(
        runtime.context,
        _sink(runtime),
        pick=pick,
        step=step,
        prefix=f"{state['epoch']}-t{turns:04d}",
    )
    update: RoomUpdate = {
        "turns": turns + 1,
        "run_turns": state["run_turns"] + 1,
        "last_speaker": pick["employee"],
        "current": None,
        "last_error": result.error or ("model_error" if not result.ok else None),
    }
    if not result.ok and index is not None:
        # Retry the step once a person has seen the error and answered.
        update["queue"] = [pick, *state["queue"]]
        return Command(goto="human", update=update)
    if index is not None and step is not None and not state["queue"]:
        update |= at_index(index + 1)
        if step["waits_for_input"]:
            return Command(goto="human", update=update)
    if _route_would_end(state, update["run_turns"], runtime.context):
        # What `route` would do now, without its step (a checkpoint write): free chat, no one
        # left to answer, under the turn cap: it would change nothing and end the run.
        runtime.context.control.interrupt = False
        return Command(goto=_END, update=update)
    return Command(goto="route", update=update)


def _route_would_end(state: RoomState, run_turns: int, deps: RoomDeps) -> bool:
    """Whether ``route``, after a turn, would end the run with no event and no change: the
    room is in free chat, its queue and inbox are empty, and the turn cap is not reached
    (``route`` would then write the outcome ``max_turns``)."""
    return (
        state["phase"] == "open"
        and not state["queue"]
        and not state.get("inbox")
        and run_turns < deps.plan.settings.max_turns
    )


async def human(state: RoomState, runtime: Runtime[RoomDeps]) -> Command[Literal["route"]]:
    """Pause until a person posts; the posted message becomes the next input."""
    deps = runtime.context
    error = state.get("last_error")
    reason = "model_error" if error else "waits_for_input"
    if state.get("interrupted"):
        reason = "interrupted"
    steps, done = state["steps"], next_index(state)
    payload = {
        "waiting_for": deps.plan.humans,
        "reason": reason,
        "after_step": steps[done - 1]["n"] if done and steps else None,
    }
    if isinstance(error, str):
        payload["error"] = error
    if state.get("interrupted"):
        payload["dropped"] = state.get("dropped") or []
    _sink(runtime).emit(
        EventKind.WAIT,
        "system",
        payload,
        id=f"{state['epoch']}-t{state['turns']:04d}-wait",
        meta={"state": snapshot(state)},  # what a rebuild from the log resumes from
    )
    message = interrupt(payload)
    if isinstance(message, dict) and message.get("retry"):
        # Room.retry(): try the failed step again without anyone's message.
        retry: RoomUpdate = {"inbox": [], "last_error": None, "interrupted": False}
        return Command(goto="route", update=retry)
    update: RoomUpdate = {"inbox": [message], "last_error": None, "interrupted": False}
    return Command(goto="route", update=update)


def run_input(values: Mapping[str, Any], paused: bool, message: Routed) -> Any:
    """What a run that posts ``message`` starts with: the answer to the room's pause
    (``paused``: an ``interrupt`` waits); in a room that has entered, the message handed
    straight to ``route`` (no input checkpoint, no START step: two checkpoint writes fewer);
    in a new room, the input, which goes through START to ``enter``."""
    if paused:
        return Command(resume=message)
    if values.get("entered"):
        return Command(goto="route", update={"inbox": [message]})
    return {"inbox": [message]}


def _start(state: RoomState) -> Literal["enter", "route"]:
    """Where a run starts: ``enter`` once, then straight at ``route``."""
    return "route" if state.get("entered") else "enter"


def build_graph(checkpointer: BaseCheckpointSaver[Any]) -> RoomGraph:
    """Compile the room graph (the same for every room; rooms differ by their context)."""
    builder = StateGraph(RoomState, context_schema=RoomDeps)
    builder.add_node("enter", enter)
    builder.add_node("route", route, destinations=get_args(RouteTo))
    # Its input is the Send payload, not the room state; langgraph's overloads miss that case.
    builder.add_node("lane", lane, input_schema=LanePayload)  # type: ignore[call-overload]
    builder.add_node("join", join, destinations=get_args(TurnTo))
    builder.add_edge("lane", "join")
    builder.add_node("turn", turn, destinations=get_args(TurnTo))
    builder.add_node("human", human, destinations=("route",))
    builder.add_conditional_edges(START, _start, ["enter", "route"])
    builder.add_edge("enter", "route")
    return builder.compile(checkpointer=checkpointer)
