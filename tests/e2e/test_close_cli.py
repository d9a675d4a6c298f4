"""`staffroom close` ends a DM's session from the terminal; its end is in the log once."""

from __future__ import annotations

import json
from pathlib import Path

from cli_in_process import Cli


def test_close_ends_a_dm_session_once(cli: Cli, tmp_path: Path) -> None:
    said = cli("dm", "pm", "--user", "alice", data=tmp_path, stdin="我叫 Alice\n")
    assert said.code == 0, said.err

    closed = cli("close", "dm:alice@pm", data=tmp_path)
    assert closed.code == 0, closed.err
    assert "session ended (closed" in closed.out

    again = cli("close", "dm:alice@pm", data=tmp_path)
    assert again.code == 0 and "already ended" in again.out

    log = tmp_path / "sessions" / "dm:alice@pm.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    ends = [e for e in events if e["kind"] == "session_end"]
    assert len(ends) == 1 and ends[0]["content"]["reason"] == "closed"
    history = tmp_path / "history" / "dm:alice@pm" / "HISTORY.md"
    assert "Alice" in history.read_text(encoding="utf-8"), "the session was folded in"

    unknown = cli("close", "room:nope", data=tmp_path)
    assert unknown.code == 2 and "Traceback" not in unknown.err
