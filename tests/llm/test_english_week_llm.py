"""An English team's week (tests/english_week.py) on the real model: Gemma 3 270M on llama.cpp.

Every request goes through the recording stub as a proxy (``StubOpenAI(upstream=…)``), so
the prompts the model was sent can be checked. Asserted: the framework's guarantees, whatever
the model answers — both rooms reach their end without a confirmation wait, no placeholder or
timestamp reaches MEMORY.md, what products are written are written through the JSON tool
protocol, every fallback says why, and no Han text is in any prompt but what the model itself
wrote (the history carries its answers). Reported, not asserted
(``-s`` shows them; benchmarks/english_week.py runs several weeks): what depends on the
model's wit — preference kept, whole name kept, ordinary messages read as corrections.

Run with ``make test-llm``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from english_week import han_in, run_week_on

from framework import EventKind
from framework.models.json_tools import PROTOCOL

pytestmark = pytest.mark.llm


async def test_an_english_teams_week_on_the_real_model(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    started = time.monotonic()
    week, requests, said_by_model = await run_week_on(llm_url, llm_model, tmp_path)
    print(f"\nenglish week on {llm_model}: {len(requests)} model calls, ", end="")
    print(f"{time.monotonic() - started:.0f} s; {week.rates()}")

    assert week.rooms_ended == [True, True], week.wait_reasons
    # The rooms waited only where their SOP pauses (or on a model error they were retried
    # from): never for a confirmation.
    assert set(week.wait_reasons) <= {"waits_for_input", "model_error"}, week.wait_reasons
    assert week.junk_in_memory() == [], week.memory_md
    # A product on disk came from its step's tool call, through the JSON protocol (this
    # server never emits native tool calls).
    native = [
        e
        for e in week.events
        if e.kind == EventKind.TOOL_CALL
        and e.content.get("name") == "write_file"
        and e.content.get("protocol") != PROTOCOL
    ]
    assert native == []
    assert week.products_via_json  # the schema-constrained call writes the step's product
    for event in week.events:
        if event.kind == EventKind.FALLBACK:
            assert event.content.get("reason") and event.content.get("used"), event.content
        if event.kind == EventKind.ERROR:
            assert event.content.get("detail"), event.content
    assert requests and han_in(requests, said_by_model) == []
