"""The `run` panel wraps an announcement's SOP lines at the terminal width, never cuts them."""

from __future__ import annotations

import io
import re

import pytest
from rich.cells import cell_len
from rich.console import Console

from framework.phrases import Language
from framework.sessions.events import EventKind, make_event
from framework.surfaces.cli.console import LabelConsole
from framework.surfaces.cli.event_labels import BESIDE_TRIAL
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


def test_the_panel_says_which_version_the_room_runs_and_whether_it_is_on_trial() -> None:
    trials = {"esc": {"arm": "trial", "trial": "esc@2", "best": "esc@1", "share": 0.5}}

    def title(sop: str, on_trial: bool, labels: Language = "en") -> str:
        announcement = "Triage the ticket."
        content = {"title": "Escalation", "announcement": announcement, "sop_trials": trials}
        meta = {"entry": True, "sop": sop, "sop_trial": on_trial}
        event = make_event("room:x", EventKind.PLAN, "system", content, meta=meta)
        out = io.StringIO()
        render_event(LabelConsole(file=out, width=100, soft_wrap=True, language=labels), event)
        return out.getvalue().splitlines()[0]

    assert "Escalation · esc@2 (on trial beside esc@1)" in title("esc@2", True)
    assert "Escalation · esc@1 (the best; esc@2 on trial elsewhere)" in title("esc@1", False)
    assert "esc@2（试用中，对照 esc@1）" in title("esc@2", True, "zh")  # labels: the project's
    assert "Escalation · other@3 ─" in title("other@3", False)  # no trial of its SOP


@pytest.mark.parametrize("labels", ["en", "zh"])
@pytest.mark.parametrize("room_title", ["A short note, drafted and reviewed", "Note " * 30])
def test_a_long_trial_label_is_never_cut_at_80_columns(labels: Language, room_title: str) -> None:
    trials = {"note": {"arm": "best", "trial": "note@2", "best": "note@1", "share": 0.5}}
    content = {"title": room_title, "announcement": "Goal: a note.", "sop_trials": trials}
    meta = {"entry": True, "sop": "note@1", "sop_trial": False}
    event = make_event("room:x", EventKind.PLAN, "system", content, meta=meta)
    out = io.StringIO()
    render_event(LabelConsole(file=out, width=80, soft_wrap=True, language=labels), event)
    lines = out.getvalue().splitlines()
    assert all(cell_len(line) <= 80 for line in lines), out.getvalue()
    label = BESIDE_TRIAL(labels, sop="note@1", trial="note@2")
    # Whole: on the border, or as the panel's first line when the border has no room for it.
    assert label in lines[0] or label in lines[1], out.getvalue()
    # The title ends with a space before the border, as rich draws a title it did not cut.
    assert re.fullmatch(r"╭─+ .+ ─+╮", lines[0]), lines[0]
    if room_title.startswith("A short"):
        assert room_title in lines[0]
    else:  # too long even alone: cut with a mark, never mid-border
        assert "…" in lines[0]
