"""Reading JSON tool answers: what a weak model sends, and what the tool loop gets from it."""

from __future__ import annotations

from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from framework.models.json_tools import GRAMMAR_MAX_CHARS, ToolCalling, answer_schema
from framework.models.profile import ModelProfile
from framework.models.scripted import ScriptedChatModel
from framework.sessions.workspace import Workspace
from framework.specs.model_spec import ToolCalling as ToolCallingMode
from framework.tools.workspace import write_file_tool

WRITE = write_file_tool(Workspace(Path("never-written"))).schema()  # only its schema is used


def calling(mode: ToolCallingMode = "json", produces: tuple[str, ...] = ()) -> ToolCalling:
    profile = ModelProfile(label="local", tool_calling=mode, structured="json_object")
    return ToolCalling(ScriptedChatModel(), [WRITE], profile, produces=produces)


def test_a_fenced_call_with_a_reply_is_a_tool_call_that_ends_the_turn() -> None:
    call = '{"tool": "write_file", "arguments": {"path": "a.md", "content": "x"}, "reply": "Done."}'
    text = f"Sure!\n```json\n{call}\n```"
    answer = calling().read(AIMessage(content=text), "c1")
    assert answer.problem is None and answer.final
    (call,) = answer.message.tool_calls
    assert (call["name"], call["args"], call["id"]) == (
        "write_file",
        {"path": "a.md", "content": "x"},
        "c1",
    )
    assert answer.message.content == "Done."


def test_a_reply_is_text_and_other_shapes_are_unusable_with_the_raw_text_kept() -> None:
    protocol = calling()
    assert protocol.read(AIMessage(content='{"reply": " Hi "}'), "c").message.content == "Hi"
    for raw, problem in [
        ("[1, 2]", "not a JSON object"),
        ('{"tool": "write_file", "arguments": "a.md"}', "not an object"),
        ('{"answer": 42}', "neither a tool call nor a reply"),
    ]:
        answer = protocol.read(AIMessage(content=raw), "c")
        assert answer.problem and problem in answer.problem, (raw, answer.problem)
        assert answer.message.content == raw and not answer.message.tool_calls


def test_an_unusable_answer_is_shown_back_once_per_turn() -> None:
    protocol = calling()
    bad = protocol.read(AIMessage(content="<html>"), "c")
    first = protocol.retry_message(bad)
    assert first is not None and "not JSON" in str(first.content)
    assert protocol.retry_message(bad) is None


def test_past_tool_exchanges_are_sent_as_plain_turns_with_the_format_last() -> None:
    protocol = calling(produces=("a.md",))
    call = {"name": "write_file", "args": {"path": "a.md", "content": "x"}, "id": "c1"}
    sent = protocol.request(
        [
            HumanMessage(content="write it"),
            AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}]),
            ToolMessage(content="wrote a.md", tool_call_id="c1"),
        ]
    )
    assert [type(m) for m in sent] == [HumanMessage, AIMessage, HumanMessage, HumanMessage]
    assert '"tool": "write_file"' in str(sent[1].content)
    assert str(sent[2].content) == "Result of write_file: wrote a.md"
    assert "write_file(path, content)" in str(sent[3].content)
    assert "must write a.md" in str(sent[3].content)


def test_native_mode_changes_nothing() -> None:
    protocol = calling("native", produces=("a.md",))
    message = AIMessage(content="prose")
    assert protocol.request([message]) == [message]
    assert protocol.read(message, "c").message is message
    assert protocol.falls_back(message) is False  # native was asked for, not auto
    assert calling("auto", produces=("a.md",)).falls_back(message) is True
    assert calling("auto").falls_back(message) is False  # nothing to write: prose is fine


def test_a_raw_newline_inside_a_string_is_read_as_a_grammar_lets_it_through() -> None:
    # Seen on llama.cpp with Gemma 3 270M: the content opened with a bare newline.
    raw = '{ "tool": "write_file", "arguments": { "path": "a.md", "content": "\nbody" } }'
    answer = calling().read(AIMessage(content=raw), "c")
    assert answer.problem is None
    assert answer.message.tool_calls[0]["args"]["content"] == "\nbody"


def test_a_required_call_names_the_steps_product_and_carries_its_reply() -> None:
    schema = answer_schema([WRITE], require_call=True, paths=["a.md"], max_chars=200)
    assert schema["required"] == ["tool", "arguments", "reply"]
    assert schema["properties"]["arguments"]["properties"]["path"]["enum"] == ["a.md"]
    free = answer_schema([WRITE], require_call=False)
    assert [v["required"] for v in free["anyOf"]] == [["tool", "arguments"], ["reply"]]


def test_no_string_bound_exceeds_what_llama_cpp_can_compile() -> None:
    # The default 2,048-token cap once gave content a maxLength of 1,488: llama.cpp's server
    # failed to parse that grammar and crashed (tests/llm/test_json_tools_llm.py sends it).
    def bounds(node: object) -> list[int]:
        if isinstance(node, dict):
            own = [node["maxLength"]] if "maxLength" in node else []
            return own + [n for v in node.values() for n in bounds(v)]
        if isinstance(node, list):
            return [n for v in node for n in bounds(v)]
        return []

    for required in (True, False):
        schema = answer_schema([WRITE], require_call=required, paths=["a.md"], max_chars=1984)
        assert bounds(schema) and max(bounds(schema)) <= GRAMMAR_MAX_CHARS
