"""The `run` panel wraps an announcement's SOP lines at the terminal width, never cuts them."""

from __future__ import annotations

import io

from rich.console import Console

from framework.sessions.events import EventKind, make_event
from framework.surfaces.cli.render import render_event


def test_long_sop_lines_wrap_inside_the_panel() -> None:
    step = "2. engineer: 技术评估 — check the rollout plan against the incident checklist end"
    content = {"title": "发布", "announcement": f"今天的任务\n{step}", "sop": "tech-article@1"}
    event = make_event("room:x", EventKind.PLAN, "system", content, meta={"entry": True})
    out = io.StringIO()
    # The CLI's console: soft_wrap keeps one line per event when piped.
    render_event(Console(file=out, width=40, soft_wrap=True), event)
    shown = " ".join(line.strip("│ ") for line in out.getvalue().splitlines())
    for word in step.split():
        assert word in shown, f"{word!r} was cut off:\n{out.getvalue()}"
    assert max(len(line) for line in out.getvalue().splitlines()) <= 40
