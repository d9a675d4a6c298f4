"""A room whose process is SIGKILLed mid-turn resumes in a new process: nothing lost or doubled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import yaml
from cli_process import staffroom_argv
from paths import ROOT


def slow_scenario(tmp_path: Path) -> Path:
    """The shipped scenario with a slow simulator, so a kill lands inside a turn."""
    data = yaml.safe_load((ROOT / "scenarios" / "tech_article.yaml").read_text(encoding="utf-8"))
    data["settings"]["model"] = {"provider": "simulated", "options": {"delay": 0.4}}
    path = tmp_path / "slow_article.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def read_events(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")
    return [json.loads(line) for line in lines if line]


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
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    # Kill while the first employee is between its tool call and its message.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        kinds = [e["kind"] for e in read_events(log)]
        if "tool_result" in kinds:
            break
        time.sleep(0.01)
    else:
        proc.kill()
        raise AssertionError(f"the room never reached a tool result: {proc.stderr}")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
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
