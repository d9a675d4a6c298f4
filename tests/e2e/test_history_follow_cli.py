"""`staffroom history SESSION --follow` prints what another process appends, as it comes."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

from paths import ROOT


def test_follow_prints_new_events_written_by_another_process(tmp_path: Path) -> None:
    data = str(tmp_path)
    first = subprocess.run(
        [sys.executable, "-m", "framework", "dm", "pm", "--user", "alice", "--data-dir", data],
        cwd=ROOT, input="hello\n", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    follower = subprocess.Popen(
        [sys.executable, "-m", "framework", "history", "dm:alice@pm", "--follow", "--json",
         "--data-dir", data],
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
        second = subprocess.run(
            [sys.executable, "-m", "framework", "dm", "pm", "--user", "alice", "--data-dir",
             data],
            cwd=ROOT, input="second message\n", capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
        assert second.returncode == 0, second.stderr
        read_until("second message")
        new = seen[before:]
        ids = [e["id"] for e in seen]
        assert len(ids) == len(set(ids)), "no event printed twice"
        assert "second message" in [e["content"] for e in new]
        assert "hello" not in [e["content"] for e in new], "old events are not printed again"
    finally:
        follower.terminate()
        follower.wait(timeout=30)
