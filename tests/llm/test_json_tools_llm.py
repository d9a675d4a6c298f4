"""A Gemma room writes its products through the JSON tool protocol (``tool_calling``).

llama.cpp's server with Gemma 3 270M never emits tool calls, so before the protocol every
step that produces a file failed. With the default ``tool_calling: auto`` the first producing
turn is asked natively, Gemma answers in prose, and the turn goes on as JSON constrained by
the answer schema; later producing turns on the model start in JSON. Run with
``make test-llm``; the measured count of products written is printed (``-s`` shows it).
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from framework import Event, EventKind, Settings, Staffroom
from framework.models.json_tools import PROTOCOL, answer_schema
from framework.sessions.keys import SessionKey
from framework.sessions.workspace import Workspace
from framework.specs.model_spec import ModelSpec
from framework.tools.workspace import write_file_tool

pytestmark = pytest.mark.llm

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 4096  # the server's --n_ctx (tests/llm/serve.py)


def settings_for(tmp_path: Path, url: str, name: str) -> Settings:
    spec = ModelSpec.model_validate(
        {
            "provider": "openai",
            "name": name,
            "base_url": url,
            "context_window": WINDOW,
            "max_output_tokens": 256,  # as the repository's models.yaml `local`
            "system_role": "fold",
            # tool_calling left at its default, auto: the tier proves the fallback too
        }
    )
    return Settings(
        data_dir=tmp_path / "data",
        project_dir=ROOT,
        allow_network=False,
        model_override=spec,
        model_backoff=0.2,
        sop_auto_extract=False,  # the products are the point; keep the run short
    )


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def test_a_gemma_room_writes_its_products_through_the_json_protocol(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    async with await Staffroom.open(settings=settings_for(tmp_path, llm_url, llm_model)) as staff:
        room = await staff.room("json-llm-1", "tech-article")
        # Steps 1 and 2 (pm, engineer), up to the author's wait: on this machine each call
        # takes 1-2 minutes, so the tier's budget holds two producing steps.
        events = await collect(room.start())
        status = await room.status()
        assert status.waiting and status.wait_reason == "waits_for_input", status
        workspace = staff.sessions.workspace(SessionKey.parse(room.key))
        written = set(workspace.list_files())
    steps = {
        e.content["n"]: list(e.content.get("produces") or [])
        for e in events
        if e.kind == EventKind.SOP_STEP
    }
    declared = [p for products in steps.values() for p in products]
    made = [p for p in declared if p in written]
    print(f"\nproducts written: {len(made)} of {len(declared)} declared ({', '.join(made)})")
    calls = [e for e in events if e.kind == EventKind.TOOL_CALL]
    results = {e.content["call_id"]: e.content for e in events if e.kind == EventKind.TOOL_RESULT}
    json_writes = [
        c
        for c in calls
        if c.content.get("protocol") == PROTOCOL
        and c.content["name"] == "write_file"
        and results.get(c.content["call_id"], {}).get("ok")
    ]
    # The framework's promise: products are written, through the JSON tool protocol.
    assert declared and made, "no declared product was written"
    assert {c.content["args"]["path"] for c in json_writes} >= set(made)
    # auto said so when it switched (a fallback with its reason), once for the model.
    switched = [
        e
        for e in events
        if e.kind == EventKind.FALLBACK
        and e.content.get("what") == "tool_calls"
        and "JSON" in e.content.get("used", "")
    ]
    assert len(switched) <= 1
    assert all(e.content.get("reason") for e in events if e.kind == EventKind.FALLBACK)
    # No turn stalled on the protocol: every step that started got a reply.
    replied = {e.meta.get("step") for e in events if e.kind == EventKind.MESSAGE}
    assert set(steps) <= replied, (steps, replied)


def test_the_schema_of_an_uncapped_model_compiles_on_the_server(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    # A new project's model entry has no max_output_tokens: the default cap (2,048) once gave
    # a 1,488-character maxLength, and the server crashed compiling it into a grammar.
    write = write_file_tool(Workspace(tmp_path)).schema()
    schema = answer_schema([write], require_call=True, paths=["a.md"], max_chars=2048 - 64)
    body = {
        "model": llm_model,
        "messages": [{"role": "user", "content": "Write a.md."}],
        "max_tokens": 8,
        "response_format": {"type": "json_object", "schema": schema},
    }
    request = urllib.request.Request(
        f"{llm_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        assert response.status == 200
    with urllib.request.urlopen(f"{llm_url}/models", timeout=30) as response:
        assert response.status == 200  # and the server is still up
