"""The English team's week (tests/english_week.py) offline, on the recording stub server.

The stub stands in for llama.cpp's Gemma where it matters to the framework and plays the
worst case everywhere else: it never emits a native tool call (so products must come through
the JSON tool protocol), it reads *every* remark as a step-order correction, and its memory
summary echoes the prompt's placeholders and a timestamp as values. The guarantees must hold
anyway: both rooms reach their end with no confirmation wait, nothing but the people's facts
reaches MEMORY.md, every product is written through the protocol, every fallback says why,
and no Han character is in any prompt of an English team. The same week on the real model is
tests/llm/test_english_week_llm.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from english_week import (
    MIXED,
    NAME,
    REMARK,
    Week,
    han_in,
    make_project,
    run_week,
    settings_for,
)
from stub_openai import StubOpenAI

from framework import EventKind, Staffroom

ORDER = {"corrections": [{"kind": "order", "step": 3, "before": 2}]}
JUNK_SUMMARY = {
    "history": ["2026-12-02 12.03.26", "maria asked what to tell Acme about the 502 errors"],
    "facts": [
        {"user": "maria", "section": "facts", "entry": "key: text"},
        {"user": "maria", "section": "facts", "entry": "updated: 2026-12-02 12:03:26"},
        {"user": "maria", "section": "identity", "entry": f"name: {NAME}"},
        {"user": "maria", "section": "preferences", "entry": "Prefers answers in bullet points"},
    ],
}


def variants(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return list(schema.get("anyOf") or [schema])


def worst_case(body: dict[str, Any]) -> dict[str, Any] | None:
    """The stub's answer, by what the request asks for (its response schema)."""
    if body.get("tools"):  # a native tool offer: answered in prose, as Gemma does
        return {"role": "assistant", "content": "I looked at it; here is what I think."}
    schema = (body.get("response_format") or {}).get("schema") or {}
    properties = schema.get("properties") or {}
    if "corrections" in properties:
        answer: dict[str, Any] = ORDER  # every remark read as a correction
    elif "facts" in properties:
        answer = JUNK_SUMMARY
    elif "edits" in properties:
        answer = {"edits": []}
    elif "items" in properties:
        answer = {"items": []}
    else:
        answer = {"reply": "Noted."}
        for variant in variants(schema):
            shape = variant.get("properties") or {}
            path = ((shape.get("arguments") or {}).get("properties") or {}).get("path") or {}
            if (shape.get("tool") or {}).get("const") == "write_file" and path.get("enum"):
                content = "Summary for the team: checkout 502s, cause and next step."
                arguments = {"path": path["enum"][0], "content": content}
                answer = {"tool": "write_file", "arguments": arguments, "reply": "Written."}
                break
    return {"role": "assistant", "content": json.dumps(answer)}


async def test_an_english_week_on_a_worst_case_model_still_ends_and_keeps_only_facts(
    tmp_path: Path,
) -> None:
    project = make_project(tmp_path / "team")
    with StubOpenAI(responder=worst_case) as stub:
        spec = {
            "name": "gemma-like",
            "base_url": stub.base_url,
            "context_window": 4096,
            "max_output_tokens": 256,
            "system_role": "fold",
        }
        async with await Staffroom.open(settings=settings_for(project, spec)) as staff:
            week: Week = await run_week(staff)
        requests = [r.body for r in stub.completions]

    # Both rooms reach their end, and nothing ever waited for a confirmation.
    assert week.rooms_ended == [True, True], week.wait_reasons
    assert set(week.wait_reasons) <= {"waits_for_input"}, week.wait_reasons
    # Every remark was read as a correction, shown back, and never counted unconfirmed.
    understood = [
        e
        for e in week.events
        if e.kind == EventKind.REMARK and e.content.get("status") == "understood"
    ]
    said = {e.content.get("source") or e.content.get("remark") for e in understood}
    assert len(understood) >= 2, said  # the remark after the run and MIXED at the pause
    assert all(e.content["text"].startswith("remark ") for e in understood)
    # The worst case reads the ordinary reply that names a step's work as a correction too:
    # shown back, never counted, and the room went on.
    assert week.ordinary_read_as_corrections == 1
    outcomes = [e.content for e in week.events if e.kind == EventKind.FEEDBACK]
    assert outcomes[0]["corrections"] == 0, outcomes  # the first room: its reply unconfirmed
    assert outcomes[-1]["corrections"] == 0, outcomes  # the rerun: MIXED unconfirmed
    # The typed correction counted at once and proposed a draft.
    assert week.sops == ["escalation@1 published", "escalation@2 draft"]
    # Memory: the people's facts whole, the echoed placeholder and timestamps refused.
    assert NAME in week.memory_md and "bullet points" in week.memory_md
    assert week.junk_in_memory() == [], week.memory_md
    assert "12.03.26" not in week.history_md
    refused = [e for e in week.fallbacks if e.content["what"] == "memory"]
    assert any("key: text" in e.content["reason"] for e in refused), refused
    # Products: every declared product written through the JSON protocol, by its own step.
    assert week.declared_products == 6
    assert sorted(week.products_via_json) == sorted(["triage.md", "diagnosis.md", "reply.md"] * 2)
    # Every fallback says what was used instead and why.
    assert all(e.content.get("reason") and e.content.get("used") for e in week.fallbacks)
    # An English team's prompts carry no Han text, the framework's or anyone's.
    assert requests and han_in(requests) == []
    # The reader saw the remark after the run and MIXED at the rerun's pause.
    read = [r for r in requests if "corrections" in str(r.get("response_format"))]
    said_to_reader = ["\n".join(str(m.get("content")) for m in r["messages"]) for r in read]
    assert any(REMARK in text for text in said_to_reader)
    assert any(MIXED in text for text in said_to_reader)
