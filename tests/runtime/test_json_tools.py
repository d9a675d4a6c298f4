"""Tool calls for models without them (``tool_calling: json | auto``), on the recording stub.

The stub stands in for llama.cpp's Gemma: it never sends tool calls unless told to, and it
records each request, so a test sees what the framework asked for and what the room did with
the answer: files in the workspace, ``tool_call`` events, ``fallback`` events, the outcome.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from stub_openai import StubOpenAI

from framework import Event, EventKind, Settings, Staffroom
from framework.models.json_tools import TOOL_RESULT
from framework.runtime.turn import NO_TOOL_CALL, UNUSABLE
from framework.sessions.keys import SessionKey
from framework.specs.model_spec import ModelSpec


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def settings_for(settings: Settings, stub: StubOpenAI, tool_calling: str) -> Settings:
    spec = ModelSpec.model_validate(
        {
            "provider": "openai",
            "name": "gemma-3-270m",
            "base_url": stub.base_url,
            "context_window": 4096,
            "max_output_tokens": 200,
            "system_role": "fold",
            "tool_calling": tool_calling,
        }
    )
    return settings.model_copy(update={"model_override": spec, "model_retries": 0})


def call(path: str, content: str, reply: str | None = None) -> str:
    answer: dict[str, Any] = {"tool": "write_file", "arguments": {"path": path, "content": content}}
    if reply is not None:
        answer["reply"] = reply
    return json.dumps(answer)


def files(staff: Staffroom, room_key: str) -> dict[str, str]:
    workspace = staff.sessions.workspace(SessionKey.parse(room_key))
    return {
        rel: workspace.resolve(rel).read_text(encoding="utf-8") for rel in workspace.list_files()
    }


def kinds(events: list[Event], kind: EventKind) -> list[Event]:
    return [e for e in events if e.kind == kind]


def last_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


async def test_json_protocol_writes_products_through_the_tool_loop(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply(call("outline.md", "# Outline\n- readers", reply="Outline is in outline.md."))
    stub_openai.reply(call("draft.md", "# Draft\nbody"))  # no reply: the loop goes on
    stub_openai.reply(json.dumps({"reply": "Draft is ready for review."}))
    async with await Staffroom.open(settings=settings_for(settings, stub_openai, "json")) as staff:
        room = await staff.room("json-1", "tech-article")
        events = await collect(room.start())
        assert files(staff, room.key) == {
            "outline.md": "# Outline\n- readers",
            "draft.md": "# Draft\nbody",
        }
    calls = kinds(events, EventKind.TOOL_CALL)
    assert [(c.author, c.content["name"], c.content["protocol"]) for c in calls] == [
        ("pm", "write_file", "json"),
        ("engineer", "write_file", "json"),
    ]
    assert all(r.content["ok"] for r in kinds(events, EventKind.TOOL_RESULT))
    replies = {e.author: e.text for e in kinds(events, EventKind.MESSAGE)}
    assert replies == {"pm": "Outline is in outline.md.", "engineer": "Draft is ready for review."}
    first, second, third = (r.body for r in stub_openai.completions)
    # Asked as a JSON answer constrained by a schema (llama.cpp's form), never as API tools.
    assert "tools" not in first and first["response_format"]["type"] == "json_object"
    # Nothing written yet at a producing step: a call of the step's own tool, to its product.
    schema = first["response_format"]["schema"]
    assert schema["properties"]["tool"] == {"const": "write_file"}
    arguments = schema["properties"]["arguments"]["properties"]
    assert arguments["path"]["enum"] == ["outline.md"]
    # Bounded so the grammar closes the JSON within the 200-token cap: 136 characters in all.
    assert arguments["content"]["maxLength"] + schema["properties"]["reply"]["maxLength"] == 136
    assert "outline.md" in last_text(first)
    # After the engineer's call its result comes back as user text, and a reply is allowed.
    said = TOOL_RESULT("zh", tool="write_file", output="")  # the sample's cards are Chinese
    assert said in "\n".join(str(m["content"]) for m in third["messages"])
    assert {"reply": {"type": "string", "maxLength": 136}} in [
        v["properties"] for v in third["response_format"]["schema"]["anyOf"]
    ]
    assert second["response_format"]["schema"] != third["response_format"]["schema"]
    assert not kinds(events, EventKind.FALLBACK) and not kinds(events, EventKind.ERROR)


async def test_auto_falls_back_to_json_when_a_producing_step_gets_no_tool_call(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("Here is my outline: readers, key points.")  # prose, no tool call
    stub_openai.reply(call("outline.md", "# Outline", reply="Written."))
    stub_openai.reply(call("draft.md", "# Draft", reply="Draft written."))
    async with await Staffroom.open(settings=settings_for(settings, stub_openai, "auto")) as staff:
        room = await staff.room("auto-1", "tech-article")
        events = await collect(room.start())
        assert set(files(staff, room.key)) == {"outline.md", "draft.md"}
    first, second, third = (r.body for r in stub_openai.completions)
    assert first["tools"] and "response_format" not in first  # native first
    assert "response_format" in second and "tools" not in second
    (fallback,) = kinds(events, EventKind.FALLBACK)
    assert fallback.author == "pm" and fallback.content["what"] == "tool_calls"
    assert fallback.content["reason"] == NO_TOOL_CALL(
        "zh", employee="pm", step=1, files="outline.md"
    )
    # The prose is kept as part of pm's reply; the file came from the JSON round.
    pm = next(e for e in kinds(events, EventKind.MESSAGE) if e.author == "pm")
    assert pm.text == "Here is my outline: readers, key points.\nWritten."
    # The engineer is on the same model: its producing turn is asked as JSON at once.
    assert "response_format" in third and "tools" not in third
    assert len(stub_openai.completions) == 3


async def test_auto_asks_natively_where_nothing_must_be_written(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("Hello Alice, how can I help?")
    async with await Staffroom.open(settings=settings_for(settings, stub_openai, "auto")) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("Hi there", author="alice"))
    (request,) = stub_openai.completions
    assert request.body["tools"] and "response_format" not in request.body
    assert [e.text for e in kinds(events, EventKind.MESSAGE) if e.author == "pm"] == [
        "Hello Alice, how can I help?"
    ]
    assert not kinds(events, EventKind.FALLBACK)


async def test_a_garbage_answer_is_a_visible_fallback_never_a_crash_or_a_wait(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    stub_openai.reply("<html>502 Bad Gateway</html>").reply('{"tool": "write_file", "argu')
    stub_openai.reply(call("draft.md", "# Draft", reply="Draft written."))
    async with await Staffroom.open(settings=settings_for(settings, stub_openai, "json")) as staff:
        room = await staff.room("junk-1", "tech-article")
        events = await collect(room.start())
        status = await room.status()
        # The room moved on to the engineer and waits for the author, as the SOP says.
        assert status.waiting and status.wait_reason != "model_error"
        assert set(files(staff, room.key)) == {"draft.md"}
        events += await collect(room.post("Looks good, continue.", author="author"))
    second = stub_openai.completions[1].body
    # The unusable answer was shown back once, with what was wrong.
    assert "not JSON ('<html>502 Bad Gateway</html>')" in last_text(second)
    fallback = next(e for e in kinds(events, EventKind.FALLBACK) if e.meta.get("step") == 1)
    assert fallback.author == "pm" and fallback.content["what"] == "tool_calls"
    assert fallback.content["reason"].startswith(UNUSABLE("zh", problem="not JSON"))
    pm = next(e for e in kinds(events, EventKind.MESSAGE) if e.author == "pm")
    assert pm.text == '{"tool": "write_file", "argu'  # shown as it came, not hidden
    outcome = next(e for e in events if e.kind == EventKind.FEEDBACK).content
    assert "第 1 步（pm）没有产出 outline.md（pm 没有调用任何工具）" in outcome["failures"]
