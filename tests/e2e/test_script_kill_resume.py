"""``run --script`` killed (SIGKILL) at several points and run again with the same command:
every script line is stored once, as a human message, and every line is answered."""

from __future__ import annotations

import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from cli_in_process import Cli
from cli_process import staffroom_argv
from killed_runs import Event, kill_when, read_events, slow_scenario
from paths import ROOT

LINES = ["方向没问题，继续。", "@designer 图再简洁一点", "@pm 收尾"]


def humans(events: list[Event]) -> list[Event]:
    return [e for e in events if e["kind"] == "message" and _meta(e).get("human")]


def _meta(event: Event) -> dict[str, object]:
    meta = event.get("meta")
    return meta if isinstance(meta, dict) else {}


def test_a_script_killed_at_several_points_posts_each_line_once(tmp_path: Path) -> None:
    script = tmp_path / "lines.txt"
    script.write_text("".join(f"author: {line}\n" for line in LINES), encoding="utf-8")
    log = tmp_path / "data" / "sessions" / "room:ks.jsonl"
    scenario = str(slow_scenario(tmp_path))
    cmd = staffroom_argv(
        "run", scenario, "--room", "ks", "--script", str(script), "--project", str(ROOT),
        data=tmp_path / "data",
    )  # fmt: skip

    def stored(n: int) -> Callable[[list[Event]], bool]:
        return lambda events: len(humans(events)) >= n

    def tool_result_after_first_line(events: list[Event]) -> bool:
        first = next((i for i, e in enumerate(events) if _meta(e).get("human")), None)
        return first is not None and any(e["kind"] == "tool_result" for e in events[first:])

    # Right after a line is stored (its answer not yet written), and mid-turn after it.
    for reached in (stored(1), tool_result_after_first_line, stored(2), stored(3)):
        kill_when(cmd, log, reached)

    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    events = read_events(log)
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids)), "no event may be written twice"
    said = humans(events)
    assert Counter(e["content"] for e in said) == Counter(LINES), "each line stored once"
    assert all(str(e["id"]).startswith("script-") for e in said)
    # Every line is answered before the next one is posted (a run a kill left between a
    # node's writes and its checkpoint is finished first, so no line lands mid-step).
    for n, line in enumerate(said):
        end = events.index(said[n + 1]) if n + 1 < len(said) else len(events)
        between = events[events.index(line) + 1 : end]
        assert any(e["kind"] == "message" and not _meta(e).get("human") for e in between)
    replies = [e for e in events if e["kind"] == "message" and _meta(e).get("why") == "sop_step"]
    steps = Counter(_meta(e).get("step") for e in replies)
    assert steps == Counter({1: 1, 2: 1, 3: 1, 4: 1}), "each SOP step answered once"
    outcomes = [e for e in events if e["kind"] == "outcome"]
    assert len(outcomes) == 1 and outcomes[0]["content"]["reason"] == "sop_complete"

    # The same script on the same room once more: every line is already there.
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert again.returncode == 0, again.stderr
    assert read_events(log) == events


def test_a_script_after_typed_lines_skips_what_was_already_said(cli: Cli, tmp_path: Path) -> None:
    """Rooms whose lines have no stable ids (typed, or posted before ids existed) are
    matched by content, in order, as before: the script does not say them again."""
    base = ("run", "tech-article", "--room", "t1")
    typed = cli(
        *base,
        "--interactive",
        stdin="author:\n继续\n",  # the first is refused on the spot, the second posted
        data=tmp_path / "data",
    )
    assert typed.code == 0, typed.err
    assert "not posted: 'author' says nothing" in typed.out
    script = tmp_path / "s.txt"
    script.write_text("author: 继续\nauthor: @pm 收尾\n", encoding="utf-8")
    done = cli(*base, "--script", str(script), data=tmp_path / "data")
    assert done.code == 0, done.err
    said = humans(read_events(tmp_path / "data" / "sessions" / "room:t1.jsonl"))
    assert [e["content"] for e in said] == ["继续", "@pm 收尾"]
    assert str(said[1]["id"]).startswith("script-2-")
