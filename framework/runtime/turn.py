"""One employee turn: build the context, call the model, run tools in a bounded loop, log it all.

This is the single tool loop of the project (rooms and DMs both come here). A model error,
a malformed tool call or an unknown tool is recorded as an ``error`` event and shown to the
model or the user; none of them crashes the room or corrupts the session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from framework.extensions.hooks import ReplyLogged
from framework.extensions.sink import EventSink
from framework.extensions.tools import ToolScope
from framework.models.brief import find_brief
from framework.models.calls import ModelCallError, call_model, text_of
from framework.models.json_tools import PROTOCOL, ToolCalling
from framework.models.quiet import is_nothing_to_report
from framework.phrases import Phrase
from framework.runtime.deps import RoomContext, RoomDeps
from framework.runtime.prompt_budget import fit_messages, total_tokens
from framework.runtime.state import Pick
from framework.runtime.turn_context import Remembered, build_messages, turn_budget
from framework.sessions.events import EventKind
from framework.specs.step import StepState
from framework.tools.base import ToolResult
from framework.tools.output import model_view, quoted_snippets


@dataclass(frozen=True, slots=True)
class TurnResult:
    """How a turn ended."""

    ok: bool
    replayed: bool = False
    error: str | None = None
    """Why it failed, in a line a person can act on (shown while the room waits)."""


EMPTY_NUDGE = (
    "你的回复是空的。请用一两句话作答。/ Your reply was empty: answer in one or two sentences."
)

# What the fallbacks of the JSON tool protocol say (models/json_tools.py) when this turn takes one.
USED_JSON = Phrase(
    en="tool calls asked for as JSON (from now on at producing steps on {model})",
    zh="改用 JSON 请求工具调用（此后 {model} 在需要产出的步骤上都这样）",
)
NO_TOOL_CALL = Phrase(
    en="{employee} was offered tools but answered step {step} (which produces {files}) "
    "without a tool call",
    zh="{employee} 有工具可用，却没有调用任何工具就回答了第 {step} 步（该步产出 {files}）",
)
USED_REPLY = Phrase(
    en="the answer as a plain reply",
    zh="把回答当作普通回复",
)
UNUSABLE = Phrase(
    en="the JSON tool answer is unusable: {problem}",
    zh="JSON 工具调用回答无法使用：{problem}",
)


@dataclass(slots=True)
class Usage:
    """What a turn's model calls cost: tokens (as the server counted them) and seconds."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    max_prompt_estimate: int = 0
    max_request_tokens: int = 0
    """The largest prompt + answer of one call, by the server's count where it gave one."""
    window: int = 0
    model_s: float = 0.0

    def add(self, response: AIMessage, estimate: int, window: int) -> None:
        """Count one answered call."""
        self.calls += 1
        self.window = window
        self.max_prompt_estimate = max(self.max_prompt_estimate, estimate)
        usage = response.usage_metadata
        if usage:
            self.input_tokens += usage.get("input_tokens", 0)
            self.output_tokens += usage.get("output_tokens", 0)
            self.max_request_tokens = max(self.max_request_tokens, usage.get("total_tokens", 0))

    def as_meta(self) -> dict[str, Any]:
        """The event meta of a turn's message (``usage`` only when a model was called)."""
        if not self.calls:
            return {}
        return {
            "usage": {
                "calls": self.calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "max_request_tokens": self.max_request_tokens,
                "prompt_estimate": self.max_prompt_estimate,
                "window": self.window,
                "model_s": round(self.model_s, 3),
            }
        }


class _Turn:
    def __init__(
        self,
        deps: RoomDeps,
        sink: EventSink,
        pick: Pick,
        step: StepState | None,
        prefix: str,
        claims: dict[str, str] | None,
    ) -> None:
        self.deps, self.sink, self.pick, self.step, self.prefix = deps, sink, pick, step, prefix
        self.claims = claims
        self.employee = pick["employee"]
        self.seq = 0
        label = deps.models.label(self.employee)
        self.meta: dict[str, Any] = {"why": pick["why"], "model": label}
        if step is not None:
            self.meta.update(sop=deps.plan.sop_ref, step=step["n"])
        if pick.get("note"):
            self.meta["note"] = pick["note"]
        self.usage = Usage()
        self.called: list[str] = []  # the tools it called, for the reply hooks
        # What one tool result may show: the scenario's budget, or less when the model's
        # window is small (set with the turn's token budget in run()).
        self.tool_budget = deps.plan.settings.tool_output_budget
        self.quoting = ""  # the model's latest text and arguments (what it may be quoting)
        self.previous_output = ""  # the last tool output it saw

    def emit(self, kind: EventKind, content: Any, **extra: Any) -> None:
        self.seq += 1
        self.sink.emit(
            kind,
            self.employee,
            content,
            id=f"{self.prefix}-{self.seq:02d}",
            meta=self.meta,
            **extra,
        )

    async def run(self, messages: list[BaseMessage], remembered: Remembered) -> TurnResult:
        deps = self.deps
        # The person being served: the memory tool writes what it learns about them.
        user = remembered.users[0] if remembered.users else deps.plan.humans[0]
        scope = ToolScope(
            deps.key, self.employee, user, deps.workspace, deps.memory, self.claims, log=deps.log
        )
        tools = deps.tools.build(scope)
        produces = list(self.step.get("produces") or []) if self.step else []
        calling = ToolCalling(
            deps.models.chat[self.employee],
            [t.schema() for t in tools.values()],
            deps.models.profiles[self.employee],
            produces=produces,
            step_tools=list(self.step["tools"]) if self.step else [],
            json_now=deps.models.label(self.employee) in deps.models.json_tools,
            language=deps.plan.prompt_language(self.employee),
        )
        budget = turn_budget(deps, self.employee)
        self.tool_budget = min(self.tool_budget, budget.tool_output_chars)
        texts: list[str] = []
        offsets: list[int] = []
        calls = shrunk = nudged = 0
        while True:
            if calls >= deps.settings.max_tool_rounds:
                limit = f"stopped after {deps.settings.max_tool_rounds} model calls"
                self.emit(EventKind.ERROR, {"error": "tool_loop_limit", "detail": limit})
                if not "".join(texts).strip():
                    # Tools ran but no answer came: that is the failure, not an empty reply.
                    return TurnResult(ok=False, error=f"{self.employee}: {limit}, no answer")
                break
            calls += 1
            try:
                raw = await self._call(
                    calling.runnable(), calling.request(fit_messages(messages, budget))
                )
            except ModelCallError as exc:
                if exc.kind == "context_length" and not shrunk:
                    # The estimate was off for this model: shrink the prompt and try once more.
                    shrunk, budget, calls = 1, budget.shrunk(), calls - 1
                    said = exc.__cause__ or exc
                    self.fallback(
                        "prompt",
                        "the prompt shrunk to half its budget",
                        f"the server answered that the prompt is too long ({said})",
                    )
                    continue
                self.emit(
                    EventKind.ERROR,
                    {
                        "error": "model_error",
                        "kind": exc.kind,
                        "detail": str(exc),
                        "attempts": exc.attempts,
                    },
                )
                return TurnResult(ok=False, error=str(exc))
            answer = calling.read(raw, f"{self.prefix}-call-{calls}")
            if retry := calling.retry_message(answer):
                messages += [AIMessage(content=text_of(raw)), retry]
                continue
            if answer.problem:
                self.fallback(
                    "tool_calls",
                    USED_REPLY(calling.language),
                    UNUSABLE(calling.language, problem=answer.problem),
                )
            response = answer.message
            if text := text_of(response):
                texts.append(text)
            # Decoded argument values, not JSON: escapes would hide a quote from the match.
            values = [str(v) for c in response.tool_calls for v in (c.get("args") or {}).values()]
            self.quoting = "\n".join([text, *values])
            if calling.falls_back(response):
                self._use_json(calling, response, messages)
                continue
            if not response.tool_calls and not response.invalid_tool_calls:
                if "".join(texts).strip() or nudged:
                    break
                # An empty answer: ask once more, plainly, before calling it an error.
                nudged = 1
                messages.append(HumanMessage(content=EMPTY_NUDGE))
                continue
            messages.append(response)
            done = await self._tool_round(
                response, tools, messages, offsets, len("\n".join(texts)), calling
            )
            if done and answer.final:
                break  # a JSON tool call with a reply: the model's last word (json_tools)
        if not "".join(texts).strip():
            detail = (
                f"{self.employee} answered with no text twice (model "
                f"'{deps.models.label(self.employee)}')"
            )
            self.emit(EventKind.ERROR, {"error": "empty_reply", "detail": detail})
            return TurnResult(ok=False, error=detail)
        self.seq += 1
        meta = {**self.meta, **self.usage.as_meta()}
        if find_brief(messages).get("quiet") is not None and is_nothing_to_report("\n".join(texts)):
            meta["nothing_to_report"] = True  # a quiet fire's explicit result: delivered nowhere
        reply = self.sink.emit(
            EventKind.MESSAGE,
            self.employee,
            "\n".join(texts),
            id=f"{self.prefix}-msg",
            meta=meta,
            text_offsets=offsets or None,
        )
        replied = ReplyLogged(
            id=reply.id,
            employee=self.employee,
            text=reply.text,
            tools_called=list(self.called),
            answering=user if remembered.said else None,
            said=remembered.said,
            offline=deps.models.profiles[self.employee].offline,
        )
        await deps.extensions.hooks.run(replied, RoomContext(deps, self.sink))
        return TurnResult(ok=True)

    async def _call(self, runnable: Any, messages: list[BaseMessage]) -> AIMessage:
        settings = self.deps.settings
        profile = self.deps.models.profiles[self.employee]
        started = time.perf_counter()
        try:
            response = await call_model(
                runnable,
                messages,
                profile,
                retries=settings.model_retries,
                backoff=settings.model_backoff,
            )
        finally:
            self.usage.model_s += time.perf_counter() - started
        self.usage.add(response, total_tokens(messages), profile.context_window)
        return response

    def fallback(self, what: str, used: str, reason: str) -> None:
        """Record that the turn did something another way than asked (shown, never silent)."""
        self.emit(EventKind.FALLBACK, {"what": what, "used": used, "reason": reason})

    async def _tool_round(
        self,
        response: AIMessage,
        tools: dict[str, Any],
        messages: list[BaseMessage],
        offsets: list[int],
        where: int,
        calling: ToolCalling,
    ) -> bool:
        """Run the response's tool calls; True when every one of them succeeded."""
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
        ok = not response.invalid_tool_calls
        for call in response.tool_calls:
            offsets.append(where)
            result = await self._call_tool(call, tools, json=calling.json)
            ok = ok and result.status == "success"
            messages.append(result)
        return ok

    def _use_json(
        self, calling: ToolCalling, response: AIMessage, messages: list[BaseMessage]
    ) -> None:
        """``auto``: the model answered a producing step without a tool call; ask again in
        JSON (later producing turns on this model in the room start there)."""
        language = calling.language
        step = self.step["n"] if self.step else 0
        files = ", ".join(calling.produces)
        label = self.deps.models.label(self.employee)
        reason = NO_TOOL_CALL(language, employee=self.employee, step=step, files=files)
        self.fallback("tool_calls", USED_JSON(language, model=label), reason)
        self.deps.models.json_tools.add(label)
        calling.switch()
        messages.append(response)

    async def _call_tool(
        self, call: Any, tools: dict[str, Any], *, json: bool = False
    ) -> ToolMessage:
        name, args, call_id = (
            call["name"],
            call.get("args") or {},
            call.get("id") or f"call-{self.seq}",
        )
        said: dict[str, Any] = {"name": name, "args": args, "call_id": call_id}
        if json:
            said["protocol"] = PROTOCOL  # asked for as a JSON answer (models/json_tools.py)
        self.emit(EventKind.TOOL_CALL, said)
        self.called.append(name)
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
        budget = self.tool_budget
        content = {"name": name, "call_id": call_id, "ok": result.ok, "output": result.output}
        # The raw output plus what shaped the model's view of it, so replay is exact.
        content.update(budget=budget, protect=protect)
        shown = model_view(content, f"{self.prefix}-{self.seq:02d}", self.deps.workspace)
        self.previous_output = result.output
        self.emit(EventKind.TOOL_RESULT, content)
        if result.fallback:
            self.fallback(**result.fallback)
        return ToolMessage(
            content=shown, tool_call_id=call_id, status="success" if result.ok else "error"
        )


async def run_turn(
    deps: RoomDeps,
    sink: EventSink,
    *,
    pick: Pick,
    step: StepState | None,
    prefix: str,
    parallel_step: str | None = None,
) -> TurnResult:
    """Run one turn for ``pick['employee']``; ``prefix`` makes its event ids deterministic.

    ``parallel_step``: the turn is a lane of that parallel step (its lanes share workspace
    claims, so two of them never silently overwrite one file).
    """
    if deps.log.has(f"{prefix}-msg"):
        # The turn finished before a crash but its checkpoint was not written: keep it.
        return TurnResult(ok=True, replayed=True)
    messages, remembered = build_messages(
        deps, sink, employee=pick["employee"], why=pick["why"], step=step
    )
    claims = deps.tools.claims(parallel_step) if parallel_step else None
    result = await _Turn(deps, sink, pick, step, prefix, claims).run(messages, remembered)
    if deps.settings.durability == "turn":
        deps.log.sync()
    return result
