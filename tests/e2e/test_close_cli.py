"""`staffroom close` ends a DM's session from the terminal; its end is in the log once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import ROOT


def staffroom(*args: str, data: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "framework", *args, "--data-dir", str(data)]
    return subprocess.run(
        cmd, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def test_close_ends_a_dm_session_once(tmp_path: Path) -> None:
    said = staffroom("dm", "pm", "--user", "alice", data=tmp_path, stdin="我叫 Alice\n")
    assert said.returncode == 0, said.stderr

    closed = staffroom("close", "dm:alice@pm", data=tmp_path)
    assert closed.returncode == 0, closed.stderr
    assert "session ended (closed" in closed.stdout

    again = staffroom("close", "dm:alice@pm", data=tmp_path)
    assert again.returncode == 0 and "already ended" in again.stdout

    log = tmp_path / "sessions" / "dm:alice@pm.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    ends = [e for e in events if e["kind"] == "session_end"]
    assert len(ends) == 1 and ends[0]["content"]["reason"] == "closed"
    history = tmp_path / "history" / "dm:alice@pm" / "HISTORY.md"
    assert "Alice" in history.read_text(encoding="utf-8"), "the session was folded in"

    unknown = staffroom("close", "room:nope", data=tmp_path)
    assert unknown.returncode == 2 and "Traceback" not in unknown.stderr
