"""`staffroom run` SIGKILLed mid-turn and run again: a scenario slow enough for the kill to
land inside a turn, the room's log as the killed process left it, and the kill itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import yaml
from paths import ROOT

Event = dict[str, object]


def slow_scenario(tmp_path: Path) -> Path:
    """The shipped scenario with a slow simulator, so a kill lands inside a turn."""
    data = yaml.safe_load((ROOT / "scenarios" / "tech_article.yaml").read_text(encoding="utf-8"))
    data["settings"]["model"] = {"provider": "simulated", "options": {"delay": 0.4}}
    path = tmp_path / "slow_article.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def read_events(path: Path) -> list[Event]:
    """The log's events; never a line still being written (or torn by the kill)."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    return [json.loads(line) for line in lines if line]


def kill_when(cmd: list[str], log: Path, reached: Callable[[list[Event]], bool]) -> None:
    """Start ``cmd``, SIGKILL it as soon as the log shows ``reached``."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while not reached(read_events(log)):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            raise AssertionError(f"the run never got there: {err.decode()[-2000:]}")
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
