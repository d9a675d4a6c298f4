"""A room whose process is SIGKILLed mid-turn resumes in a new process: nothing lost or doubled."""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path

from cli_process import staffroom_argv
from killed_runs import kill_when, read_events, slow_scenario
from paths import ROOT


def test_killed_room_resumes_without_lost_or_duplicated_events(tmp_path: Path) -> None:
    scenario = slow_scenario(tmp_path)
    script = tmp_path / "script.txt"
    script.write_text("author: 方向没问题，继续\n", encoding="utf-8")
    log = tmp_path / "data" / "sessions" / "room:k1.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    # The same command twice: killed mid-run, then run again to resume.
    argv = staffroom_argv(
        "run",
        str(scenario),
        "--room",
        "k1",
        "--script",
        str(script),
        "--project",
        str(ROOT),
        data=tmp_path / "data",
    )
    # Kill while the first employee is between its tool call and its message.
    kill_when(argv, log, lambda events: any(e["kind"] == "tool_result" for e in events))
    before = read_events(log)
    assert not any(e["kind"] == "outcome" for e in before), "the kill should land mid-run"

    done = subprocess.run(
        argv,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    events = read_events(log)
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids)), "no event may be written twice"
    assert [e["id"] for e in events[: len(before)]] == [e["id"] for e in before], "nothing lost"
    replies = [
        e for e in events if e["kind"] == "message" and not (e.get("meta") or {}).get("human")
    ]
    steps = Counter((e.get("meta") or {}).get("step") for e in replies)
    assert steps == Counter({1: 1, 2: 1, 3: 1, 4: 1}), steps
    plans = [e for e in events if e["kind"] == "plan"]
    assert sum(1 for e in plans if (e.get("meta") or {}).get("entry")) == 1
    assert sum(1 for e in events if e["kind"] == "feedback") == 1  # feedback recorded once
    outcomes = [e for e in events if e["kind"] == "outcome"]
    assert len(outcomes) == 1 and outcomes[0]["content"]["reason"] == "sop_complete"
