"""Consolidation SIGKILLed mid-run, then rerun: nothing summarised twice, nothing skipped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from paths import ROOT

from framework import Settings, Staffroom

# A slow "real" model for the consolidation prompt: one JSON summary per batch, naming the
# batch's first and last message so every batch's line is distinct.
WORKER = """
import asyncio, json, sys, time
from pathlib import Path
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from framework import Settings, Staffroom

class SlowSummariser(FakeListChatModel):
    async def ainvoke(self, messages, *args, **kwargs):
        await asyncio.sleep(0.25)
        lines = [l for l in str(messages[-1].content).splitlines() if l]
        from langchain_core.messages import AIMessage
        body = {"history": [f"batch {lines[0]} .. {lines[-1]}"], "facts": []}
        return AIMessage(content=json.dumps(body, ensure_ascii=False))

async def main():
    settings = Settings(data_dir=Path(sys.argv[1]), project_dir=Path(sys.argv[2]),
                        allow_network=False, consolidate_in_background=False)
    model = SlowSummariser(responses=["unused"])
    factory = lambda spec, who: model if who == "engineer" else None
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.session("dm:alice@engineer")
        await room.consolidate(force=True)

asyncio.run(main())
"""


async def make_session(settings: Settings, posts: int) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("engineer", "alice")
        for i in range(posts):
            async for _ in dm.post(f"消息 {i:02d}", author="alice"):
                pass


def test_consolidation_survives_a_kill(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(
        data_dir=data, project_dir=ROOT, allow_network=False, consolidate_in_background=False
    )
    asyncio.run(make_session(settings, 40))  # 80 messages; 70 to fold in 7 batches
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    cmd = [sys.executable, str(script), str(data), str(ROOT)]
    history = data / "history" / "dm:alice@engineer" / "HISTORY.md"

    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if history.exists() and history.read_text(encoding="utf-8").count("<!-- batch") >= 2:
            break
        time.sleep(0.01)
    time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_at = history.read_text(encoding="utf-8").count("<!-- batch")
    assert 2 <= killed_at < 7, "the kill should land between batches"

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=os.environ)
    assert done.returncode == 0, done.stderr

    text = history.read_text(encoding="utf-8")
    markers = [line for line in text.splitlines() if line.startswith("<!-- batch")]
    entries = [line for line in text.splitlines() if line.startswith("20")]
    assert len(markers) == len(set(markers)) == 7
    assert len(entries) == len(set(entries)) == 7
    log = data / "sessions" / "dm:alice@engineer.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    pointers = [e for e in events if e["kind"] == "consolidation"]
    assert len(pointers) == 7
    assert sum(p["content"]["messages"] for p in pointers) == 70
    # Each batch starts right after the previous one ends: no message skipped or doubled.
    messages = [e["id"] for e in events if e["kind"] == "message"]
    ends = [messages.index(p["content"]["through"]) for p in pointers]
    assert ends == [9 + 10 * i for i in range(7)]
