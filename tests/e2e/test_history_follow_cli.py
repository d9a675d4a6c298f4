"""`staffroom history SESSION --follow` prints what another process appends, as it comes."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path

from cli_in_process import Cli
from cli_process import staffroom_argv
from paths import ROOT


def test_follow_prints_new_events_written_by_another_process(cli: Cli, tmp_path: Path) -> None:
    # The writer is this process; the follower is its own.
    first = cli("dm", "pm", "--user", "alice", stdin="hello\n", data=tmp_path)
    assert first.code == 0, first.err
    follower = subprocess.Popen(
        staffroom_argv("history", "dm:alice@pm", "--follow", "--json", data=tmp_path),
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert follower.stdout is not None
    threading.Thread(target=lambda: [lines.put(x) for x in follower.stdout], daemon=True).start()
    try:
        seen: list[dict[str, object]] = []

        def read_until(text: str) -> None:
            while not any(e.get("content") == text for e in seen):
                seen.append(json.loads(lines.get(timeout=60)))

        read_until("hello")  # the history so far
        before = len(seen)
        second = cli("dm", "pm", "--user", "alice", stdin="second message\n", data=tmp_path)
        assert second.code == 0, second.err
        read_until("second message")
        new = seen[before:]
        ids = [e["id"] for e in seen]
        assert len(ids) == len(set(ids)), "no event printed twice"
        assert "second message" in [e["content"] for e in new]
        assert "hello" not in [e["content"] for e in new], "old events are not printed again"
    finally:
        follower.terminate()
        follower.wait(timeout=30)
