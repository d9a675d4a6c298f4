"""Tool calls for models without them: the tool call asked for as a JSON answer.

Some servers never emit tool calls (llama.cpp's Gemma: the API's ``tools`` are ignored and
the model answers in prose), so a step that must write a file never does. With
``tool_calling: json`` a turn asks for one JSON object instead, in one of two shapes::

    {"tool": "write_file", "arguments": {"path": "notes.md", "content": "…"}, "reply": "…"}
    {"reply": "…"}

and :class:`ToolCalling` turns it into the :class:`~langchain_core.messages.AIMessage` a
native model would have sent (``tool_calls`` or text), so the turn runs the *same* tool loop:
tools are called and logged, their results are fed back (as user text, since such templates
have no tool role), rounds are bounded. The schema goes into ``response_format`` by the
profile's ``structured`` mode (llama.cpp turns ``json_object`` + schema into a grammar, so the
answer is valid JSON naming a real tool); the prompt always carries the shapes and the tools.

A ``reply`` beside a tool call is the model's last word: the turn ends once that call
succeeded (a weak model otherwise calls the same tool until the round limit). At a step that
produces files, until a tool was called in the turn, only calls of the step's own tools are
offered and a ``path`` argument must name one of its products (the step's contract: a small
model otherwise invents file names or only talks), and that call carries its reply, so one
answer writes the product and ends the turn (measured on Gemma 3 270M: a second round
rewrote another step's file and echoed the prompt). Where the schema becomes a grammar
(``json_object``), its free strings are bounded so the JSON closes before the output cap.

``auto`` asks natively first and switches to JSON when a model that was offered tools answers
a step that produces files without any tool call (:meth:`ToolCalling.falls_back`).
An answer that cannot be read is shown back once, then used as a plain reply: either way a
``fallback`` event says so (:attr:`JsonAnswer.problem`), never a crash or a wait.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable

from framework.language import snippet
from framework.models.calls import text_of
from framework.models.profile import ModelProfile
from framework.models.structured import extract_json
from framework.phrases import Phrase

PROTOCOL = "json"
"""The ``protocol`` recorded on a ``tool_call`` event made through this module."""

INSTRUCTIONS = Phrase(
    en="Answer with one JSON object and nothing else. To call a tool, the object has "
    '"tool" (the tool\'s name) and "arguments" (an object of its arguments), and may have '
    '"reply" (your message to the room, which ends your turn). To answer without a tool, the '
    'object has "reply" only.\nTools:\n{tools}',
    zh='只回答一个 JSON 对象，不要写别的。调用工具时，对象含 "tool"（工具名）和 "arguments"'
    '（参数对象），可再加 "reply"（你对房间说的话，写了就结束本轮）。不调用工具时，对象只含 '
    '"reply"。\n工具：\n{tools}',
)
MUST_CALL = Phrase(
    en="This step must write {files}: answer with a tool call and a reply.",
    zh="这一步必须写出 {files}：请用工具调用并附上 reply 来回答。",
)
TOOL_RESULT = Phrase(
    en="Result of {tool}: {output}",
    zh="{tool} 的结果：{output}",
)
UNUSABLE_RETRY = Phrase(
    en="That answer cannot be used: {problem}. Answer again with one JSON object.",
    zh="这个回答无法使用：{problem}。请重新只回答一个 JSON 对象。",
)
GRAMMAR_MAX_CHARS = 1000
"""The longest ``maxLength`` a schema string gets: llama.cpp compiles ``maxLength: n`` into n
nested optional rules, and llama-cpp-python 0.3.36's server fails to parse the grammar above
about a thousand ("number of rules ... exceeds sane defaults") and then crashes (measured:
1,000 compiles, 1,200 and 1,400 killed the server). With the default 2,048-token output cap
the bound was 1,488, so a new project's first producing step took its local server down."""


@dataclass(frozen=True, slots=True)
class JsonAnswer:
    """One answer read: the message a native model would have sent, and what went wrong."""

    message: AIMessage
    problem: str | None = None
    """Why the answer could not be read as the protocol (None: it could)."""
    final: bool = False
    """A tool call that came with a reply: the turn ends once the call succeeded."""


def _bare(node: Any) -> Any:
    """A JSON schema without titles (fewer tokens for a small window; same constraints)."""
    if isinstance(node, dict):
        return {k: _bare(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_bare(v) for v in node]
    return node


def _with_paths(parameters: dict[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """``parameters`` whose string ``path`` property must be one of ``paths``."""
    path = (parameters.get("properties") or {}).get("path")
    if not paths or not isinstance(path, dict) or path.get("type") != "string":
        return parameters
    properties = {**parameters["properties"], "path": {**path, "enum": list(paths)}}
    return {**parameters, "properties": properties}


def _free_strings(parameters: dict[str, Any]) -> list[str]:
    properties = parameters.get("properties") or {}
    return [
        name
        for name, p in properties.items()
        if isinstance(p, dict) and p.get("type") == "string" and not {"enum", "const"} & set(p)
    ]


def _bounded(parameters: dict[str, Any], chars: int | None) -> tuple[dict[str, Any], int | None]:
    """``parameters`` whose free strings share three quarters of ``chars``; and the reply's
    bound (the rest). None: unbounded."""
    names = _free_strings(parameters)
    if chars is None:
        return parameters, None
    reply = min(GRAMMAR_MAX_CHARS, max(16, chars // 4))
    each = min(GRAMMAR_MAX_CHARS, max(16, (chars - reply) // max(1, len(names))))
    properties = dict(parameters.get("properties") or {})
    for name in names:
        properties[name] = {**properties[name], "maxLength": each}
    return {**parameters, "properties": properties}, reply


def _reply(chars: int | None) -> dict[str, Any]:
    if chars is None:
        return {"type": "string"}
    return {"type": "string", "maxLength": min(chars, GRAMMAR_MAX_CHARS)}


def answer_schema(
    tools: Sequence[dict[str, Any]],
    *,
    require_call: bool,
    paths: Sequence[str] = (),
    max_chars: int | None = None,
) -> dict[str, Any]:
    """The JSON schema of one answer: a call of one of ``tools`` (OpenAI-style function
    schemas), or, unless ``require_call``, a plain reply. ``require_call`` also requires the
    call's ``reply`` (one answer writes the product and ends the turn). With ``paths``, a
    tool's string ``path`` argument must name one of them; with ``max_chars``, the answer's
    free strings together hold at most that many characters (so a grammar closes the JSON in
    time)."""
    variants: list[dict[str, Any]] = []
    for tool in tools:
        function = tool["function"]
        parameters = _with_paths(_bare(function.get("parameters") or {"type": "object"}), paths)
        arguments, reply = _bounded(parameters, max_chars)
        variants.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"const": function["name"]},
                    "arguments": arguments,
                    "reply": _reply(reply),
                },
                "required": ["tool", "arguments", "reply"]
                if require_call
                else ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    if not require_call or not variants:
        variants.append(
            {
                "type": "object",
                "properties": {"reply": _reply(max_chars)},
                "required": ["reply"],
                "additionalProperties": False,
            }
        )
    return variants[0] if len(variants) == 1 else {"anyOf": variants}


def _signature(tool: dict[str, Any]) -> str:
    function = tool["function"]
    parameters = function.get("parameters") or {}
    required = set(parameters.get("required") or ())
    names = [n if n in required else f"{n}?" for n in parameters.get("properties") or {}]
    return f"- {function['name']}({', '.join(names)}): {function.get('description', '')}"


class ToolCalling:
    """How one turn asks for tool calls: natively, or as JSON answers (see the module)."""

    def __init__(
        self,
        model: BaseChatModel,
        tools: Sequence[dict[str, Any]],
        profile: ModelProfile,
        *,
        produces: Sequence[str] = (),
        step_tools: Sequence[str] = (),
        json_now: bool = False,
        language: str = "en",
    ) -> None:
        """``produces`` and ``step_tools``: the SOP step's products and the tools it names;
        ``json_now``: use JSON from the first call (``auto`` learned it earlier)."""
        self.model, self.tools, self.profile = model, list(tools), profile
        self.produces, self.language = list(produces), language
        named = [t for t in self.tools if t["function"]["name"] in set(step_tools)]
        self._required = named or self.tools
        """The tools a required call may name: the step's own, when it names any held."""
        self.mode = "json" if tools and (profile.tool_calling == "json" or json_now) else "native"
        self.called = False
        """Whether a tool was called in this turn (no call yet: products must be asked for)."""
        self.retried = False
        self._native = model.bind_tools(self.tools) if self.tools else model

    @property
    def json(self) -> bool:
        """True when answers are asked for as JSON."""
        return self.mode == "json"

    def falls_back(self, response: AIMessage) -> bool:
        """``auto``: a native answer at a step that produces files, with no tool call in the
        turn, switches the turn (and the room's later such turns on this model) to JSON."""
        return (
            self.mode == "native"
            and self.profile.tool_calling == "auto"
            and bool(self.tools and self.produces)
            and not self.called
            and not response.tool_calls
            and not response.invalid_tool_calls
        )

    def switch(self) -> None:
        """Ask for JSON from the next call on."""
        self.mode = "json"

    def _require_call(self) -> bool:
        return bool(self.produces) and not self.called

    def runnable(self) -> Runnable[LanguageModelInput, Any]:
        """What to call: the model with tools bound, or with the JSON answer format."""
        if not self.json:
            return self._native
        # A grammar-constrained answer cut at the output cap is invalid JSON: bound its text.
        # One character per token is the worst case (CJK); 64 tokens cover the JSON around it.
        cap = self.profile.max_output_tokens
        bound = max(64, cap - 64) if self.profile.structured == "json_object" else None
        if self._require_call():
            schema = answer_schema(
                self._required, require_call=True, paths=self.produces, max_chars=bound
            )
        else:
            schema = answer_schema(self.tools, require_call=False, max_chars=bound)
        if self.profile.structured == "json_schema":
            spec = {"name": "tool_answer", "schema": schema, "strict": False}
            return self.model.bind(response_format={"type": "json_schema", "json_schema": spec})
        if self.profile.structured == "json_object":
            # llama.cpp's server compiles this schema into a grammar; others read JSON mode.
            return self.model.bind(response_format={"type": "json_object", "schema": schema})
        return self.model

    def request(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` as this mode sends them: unchanged natively; for JSON, past tool
        exchanges as plain text and the answer format after the last message."""
        if not self.json:
            return list(messages)
        names: dict[str, str] = {}
        out: list[BaseMessage] = []
        for message in messages:
            if isinstance(message, AIMessage) and message.tool_calls:
                for call in message.tool_calls:
                    names[call.get("id") or ""] = call["name"]
                calls = [{"tool": c["name"], "arguments": c["args"]} for c in message.tool_calls]
                out.append(AIMessage(content="\n".join(json.dumps(c) for c in calls)))
            elif isinstance(message, ToolMessage):
                tool = names.get(message.tool_call_id, "the tool")
                output = TOOL_RESULT(self.language, tool=tool, output=text_of(message))
                out.append(HumanMessage(content=output))
            else:
                out.append(message)
        tools = "\n".join(_signature(t) for t in self.tools)
        block = INSTRUCTIONS(self.language, tools=tools)
        if self._require_call():
            block += "\n" + MUST_CALL(self.language, files=", ".join(self.produces))
        return [*out, HumanMessage(content=block)]

    def read(self, response: AIMessage, call_id: str) -> JsonAnswer:
        """The answer as a native message (``call_id`` names a tool call it makes)."""
        if not self.json:
            self.called = self.called or bool(response.tool_calls)
            return JsonAnswer(response)
        raw = text_of(response)
        try:
            # strict=False: a grammar lets a raw newline into a string, which JSON forbids.
            data = json.loads(raw, strict=False)
        except ValueError:
            try:
                data = extract_json(raw)
            except ValueError as exc:
                return self._unusable(response, raw, str(exc))
        if not isinstance(data, dict):
            return self._unusable(response, raw, f"not a JSON object ('{snippet(raw, 40)}')")
        reply = data.get("reply")
        reply = reply.strip() if isinstance(reply, str) else ""
        tool = data.get("tool") or data.get("name")
        if isinstance(tool, str) and tool:
            args = data.get("arguments", data.get("args", {}))
            if not isinstance(args, dict):
                return self._unusable(response, raw, f"the arguments of {tool} are not an object")
            self.called = True
            call = {"name": tool, "args": args, "id": call_id, "type": "tool_call"}
            message = self._like(response, content=reply, tool_calls=[call])
            return JsonAnswer(message, final=bool(reply))
        if "reply" in data and isinstance(data["reply"], str):
            return JsonAnswer(self._like(response, content=reply))
        return self._unusable(response, raw, "neither a tool call nor a reply")

    def retry_message(self, answer: JsonAnswer) -> HumanMessage | None:
        """The message that shows an unusable answer back (once a turn; None after)."""
        if answer.problem is None or self.retried:
            return None
        self.retried = True
        return HumanMessage(content=UNUSABLE_RETRY(self.language, problem=answer.problem))

    def _unusable(self, response: AIMessage, raw: str, problem: str) -> JsonAnswer:
        # The raw text stands as a plain reply: shown, counted as no tool call, never a wait.
        return JsonAnswer(self._like(response, content=raw.strip()), problem=problem)

    @staticmethod
    def _like(response: AIMessage, **fields: Any) -> AIMessage:
        return AIMessage(
            **fields,
            response_metadata=response.response_metadata,
            usage_metadata=response.usage_metadata,
            id=response.id,
        )


__all__ = ["PROTOCOL", "JsonAnswer", "ToolCalling", "answer_schema"]
