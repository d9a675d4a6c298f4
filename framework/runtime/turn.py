"""One employee turn: build the context, call the model, run tools in a bounded loop, log it all.

This is the single tool loop of the project (rooms and DMs both come here). A model error,
a malformed tool call or an unknown tool is recorded as an ``error`` event and shown to the
model or the user; none of them crashes the room or corrupts the session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from framework.memory.memory_tool import memory_tool
from framework.memory.tool_output import quoted_snippets
from framework.prompts.context import Remembered, build_messages
from framework.runtime.deps import RoomDeps
from framework.runtime.replay import model_view
from framework.runtime.tools import ToolResult
from framework.sessions.events import EventKind


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended."""

    ok: bool
    replayed: bool = False


def _text_of(message: AIMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    parts = [p.get("text", "") if isinstance(p, dict) else str(p) for p in message.content]
    return "".join(parts)


class _Turn:
    def __init__(
        self,
        deps: RoomDeps,
        writer: Callable[[Any], None],
        pick: dict[str, Any],
        step: dict[str, Any] | None,
        prefix: str,
    ) -> None:
        self.deps, self.writer, self.pick, self.step, self.prefix = deps, writer, pick, step, prefix
        self.employee = str(pick["employee"])
        self.seq = 0
        label = deps.model_labels[self.employee]
        self.meta: dict[str, Any] = {"why": pick["why"], "model": label}
        if step is not None:
            self.meta.update(sop=deps.plan.sop_ref, step=step["n"])
        if pick.get("note"):
            self.meta["note"] = pick["note"]
        self.quoting = ""  # the model's latest text and arguments (what it may be quoting)
        self.previous_output = ""  # the last tool output it saw

    def emit(self, kind: EventKind, content: Any, **extra: Any) -> None:
        self.seq += 1
        self.deps.emit(
            self.writer,
            kind,
            self.employee,
            content,
            id=f"{self.prefix}-{self.seq:02d}",
            meta=self.meta,
            **extra,
        )

    async def run(self, messages: list[BaseMessage], remembered: Remembered) -> TurnResult:
        deps = self.deps
        card = deps.plan.employees[self.employee]
        tools = {name: deps.tools[name] for name in card.tools if name in deps.tools}
        # The memory tool is built in: it writes MEMORY.md about the person being served.
        user = remembered.users[0] if remembered.users else deps.plan.scenario.humans[0]
        tools["memory"] = memory_tool(deps.memory.memory(self.employee, user))
        model = deps.models[self.employee]
        runnable = model.bind_tools([t.schema() for t in tools.values()]) if tools else model
        texts: list[str] = []
        offsets: list[int] = []
        for _ in range(deps.settings.max_tool_rounds):
            try:
                response = await runnable.ainvoke(messages)
            except Exception as exc:  # any provider failure is data for the user, not a crash
                self.emit(
                    EventKind.ERROR,
                    {"error": "model_error", "detail": f"{type(exc).__name__}: {exc}"},
                )
                return TurnResult(ok=False)
            if not isinstance(response, AIMessage):
                response = AIMessage(content=str(getattr(response, "content", response)))
            if text := _text_of(response):
                texts.append(text)
            # Decoded argument values, not JSON: escapes would hide a quote from the match.
            values = [str(v) for c in response.tool_calls for v in (c.get("args") or {}).values()]
            self.quoting = "\n".join([text, *values])
            if not response.tool_calls and not response.invalid_tool_calls:
                break
            messages.append(response)
            where = len("\n".join(texts))
            for bad in response.invalid_tool_calls:
                why = bad.get("error") or "arguments are not valid JSON"
                detail = f"malformed tool call {bad.get('name')!r}: {why}"
                self.emit(
                    EventKind.ERROR,
                    {"error": "malformed_tool_call", "detail": detail, "raw": bad.get("args")},
                )
                messages.append(
                    HumanMessage(
                        content=f"Error: {detail}. Call the tool again with valid JSON arguments."
                    )
                )
            for call in response.tool_calls:
                offsets.append(where)
                messages.append(await self._call_tool(call, tools))
        else:
            self.emit(
                EventKind.ERROR,
                {
                    "error": "tool_loop_limit",
                    "detail": f"stopped after {deps.settings.max_tool_rounds} model calls",
                },
            )
        self.seq += 1
        deps.emit(
            self.writer,
            EventKind.MESSAGE,
            self.employee,
            "\n".join(texts),
            id=f"{self.prefix}-msg",
            meta=self.meta,
            text_offsets=offsets or None,
        )
        return TurnResult(ok=True)

    async def _call_tool(self, call: Any, tools: dict[str, Any]) -> ToolMessage:
        name, args, call_id = (
            call["name"],
            call.get("args") or {},
            call.get("id") or f"call-{self.seq}",
        )
        self.emit(EventKind.TOOL_CALL, {"name": name, "args": args, "call_id": call_id})
        tool = tools.get(name)
        if tool is None:
            allowed = ", ".join(sorted(tools)) or "none"
            result = ToolResult(
                False, f"Error: unknown tool '{name}'. Tools you can call: {allowed}."
            )
            self.emit(EventKind.ERROR, {"error": "unknown_tool", "detail": result.output})
        else:
            result = await tool.call(args)
        protect = quoted_snippets(self.quoting, self.previous_output)
        budget = self.deps.plan.scenario.settings.tool_output_budget
        content = {"name": name, "call_id": call_id, "ok": result.ok, "output": result.output}
        # The raw output plus what shaped the model's view of it, so replay is exact.
        content.update(budget=budget, protect=protect)
        shown = model_view(content, f"{self.prefix}-{self.seq:02d}", self.deps.workspace)
        self.previous_output = result.output
        self.emit(EventKind.TOOL_RESULT, content)
        return ToolMessage(
            content=shown, tool_call_id=call_id, status="success" if result.ok else "error"
        )


async def run_turn(
    deps: RoomDeps,
    writer: Callable[[Any], None],
    *,
    pick: dict[str, Any],
    step: dict[str, Any] | None,
    prefix: str,
) -> TurnResult:
    """Run one turn for ``pick['employee']``; ``prefix`` makes its event ids deterministic."""
    if deps.log.has(f"{prefix}-msg"):
        # The turn finished before a crash but its checkpoint was not written: keep it.
        return TurnResult(ok=True, replayed=True)
    messages, remembered = build_messages(
        deps, employee=pick["employee"], why=pick["why"], step=step
    )
    result = await _Turn(deps, writer, pick, step, prefix).run(messages, remembered)
    if deps.settings.durability == "turn":
        deps.log.sync()
    return result
