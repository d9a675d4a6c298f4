"""A whole sample room on a real model with the default ``tool_calling: auto``: which products
each step wrote through the JSON tool protocol, the outcome, and the time it took.

Usage (a llama.cpp server as tests/llm/serve.py starts it)::

    STAFFROOM_TEST_LLM_URL=http://127.0.0.1:PORT/v1 STAFFROOM_TEST_LLM_MODEL=gemma-3-270m-q4_k_m \\
        PYTHONPATH=.:tests .venv/bin/python benchmarks/json_tools_room.py [DATA_DIR]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from framework import EventKind, Staffroom
from framework.models.json_tools import PROTOCOL
from framework.sessions.keys import SessionKey

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
from test_json_tools_llm import collect, settings_for  # the tier's settings


async def main(data: Path) -> None:
    url = os.environ["STAFFROOM_TEST_LLM_URL"]
    model = os.environ.get("STAFFROOM_TEST_LLM_MODEL", "local")
    started = time.monotonic()
    async with await Staffroom.open(settings=settings_for(data, url, model)) as staff:
        room = await staff.room("json-room-1", "tech-article")
        events = await collect(room.start())
        events += await collect(room.post("Looks good, continue.", author="author"))
        written = set(staff.sessions.workspace(SessionKey.parse(room.key)).list_files())
    steps = {
        e.content["n"]: list(e.content.get("produces") or [])
        for e in events
        if e.kind == EventKind.SOP_STEP
    }
    own = [
        (n, path)
        for n, paths in steps.items()
        for path in paths
        if path in written
        and any(
            e.kind == EventKind.TOOL_CALL
            and e.meta.get("step") == n
            and e.content.get("protocol") == PROTOCOL
            and e.content["args"].get("path") == path
            for e in events
        )
    ]
    declared = sum(len(p) for p in steps.values())
    outcome = next((e.content for e in events if e.kind == EventKind.FEEDBACK), {})
    print(f"products written by their own step via JSON: {len(own)} of {declared} {own}")
    print(f"outcome: success={outcome.get('success')} failures={outcome.get('failures')}")
    print(f"fallbacks: {sum(1 for e in events if e.kind == EventKind.FALLBACK)}")
    print(f"time: {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    asyncio.run(main(folder))
