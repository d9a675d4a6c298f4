"""Success needs evidence: declared products, non-empty replies, recovered model errors."""

from __future__ import annotations

import asyncio
import io
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from paths import ROOT
from rich.console import Console
from typer.testing import CliRunner

from framework import Event, EventKind, Settings, Staffroom
from framework.errors import SopCardError
from framework.models import ScriptedChatModel
from framework.sessions.events import make_event
from framework.sessions.keys import SessionKey
from framework.sop.edits import EditOp, apply_edits, diff_steps
from framework.sop.library_io import card_to_version, import_library, version_to_card_text
from framework.sop.model import Outcome, SopVersion, Status, Step
from framework.sop.outcomes import run_outcome
from framework.sop.store import SopStore
from framework.specs.model_spec import ModelSpec
from framework.specs.sop_card import load_sop_card
from framework.surfaces.cli import app
from framework.surfaces.cli.render import render_event

LIBRARY = ROOT / "sop_library"


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def outcome_of(events: list[Event]) -> dict[str, Any]:
    feedback = next(e for e in events if e.kind == EventKind.FEEDBACK)
    return dict(feedback.content)


def scripted(replies: dict[str, list[Any]]) -> Any:
    """A model factory: the named employees get scripted models, the others the simulator."""
    models = {who: ScriptedChatModel(replies=list(r)) for who, r in replies.items()}

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return models.get(who)

    return factory


def write_call(path: str, text: str) -> AIMessage:
    call = {"name": "write_file", "args": {"path": path, "content": text}, "id": f"w-{path}"}
    return AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])


def _event(kind: EventKind, author: str, content: Any, step: int | None = None) -> Event:
    meta: dict[str, Any] = {"why": "sop_step", "step": step} if step is not None else {}
    return make_event("room:x", kind, author, content, meta=meta)


# Spare replies: the model reviser asks the room's first employee (pm) after the run.
TALK_ONLY = {
    "pm": ["提纲我已经想好了。", "定稿没问题。", "{}", "{}"],
    "engineer": ["初稿我来写。", "好的。"],
    "designer": ["配图我来出。", "好的。"],
}


async def test_a_run_whose_employees_write_nothing_is_not_a_success(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings, model_factory=scripted(TALK_ONLY)) as staff:
        room = await staff.room("talk-1", "tech-article")
        await drain(room.start())
        outcome = outcome_of(await drain(room.post("方向没问题，继续。", author="author")))
        assert outcome["success"] is False
        assert outcome["failures"] == [
            # Each line says why, in the room's language: the model answered in words and
            # called no tool (an English room: tests/sop/test_failures_language.py).
            "第 1 步（pm）没有产出 outline.md（pm 没有调用任何工具）",
            "第 2 步（engineer）没有产出 draft.md（engineer 没有调用任何工具）",
            "第 3 步（designer）没有产出 figures.md（designer 没有调用任何工具）",
        ]
        # Stored against the version: it lowers the version's record, not raises it.
        (stored,) = await staff.sops.store.outcomes("tech-article@1")
        assert stored.success is False and stored.failures == tuple(outcome["failures"])
        assert (await staff.sops.store.metrics("tech-article@1")).successes == 0


async def test_a_good_score_does_not_make_a_run_without_its_products_a_success(
    settings: Settings,
) -> None:
    async with await Staffroom.open(settings=settings, model_factory=scripted(TALK_ONLY)) as staff:
        room = await staff.room("talk-2", "tech-article")
        await drain(room.start())
        outcome = outcome_of(await drain(room.post("继续。评分: 5/5", author="author")))
        assert outcome["success"] is False and outcome["score"] == 1.0
        assert "第 1 步（pm）没有产出 outline.md（pm 没有调用任何工具）" in outcome["failures"]


async def test_an_employee_who_only_answers_with_nothing_is_named(settings: Settings) -> None:
    # pm writes the outline but never says a word, however often it is asked.
    pm = [write_call("outline.md", "# 提纲\n- 读者\n"), *[""] * 10]
    async with await Staffroom.open(settings=settings, model_factory=scripted({"pm": pm})) as staff:
        room = await staff.room("empty-1", "tech-article")
        await drain(room.start())
        outcome = outcome_of(await drain(room.post("结束会议", author="author")))
        assert outcome["success"] is False
        assert "pm 在第 1 步的回复是空的" in outcome["failures"]


def test_an_empty_reply_makes_a_completed_run_not_a_success(tmp_path: Path) -> None:
    step = {"n": 1, "speakers": ["pm"], "do": "提纲", "tools": [], "produces": []}
    events = [
        _event(EventKind.SOP_STEP, "system", step, 1),
        _event(EventKind.MESSAGE, "pm", " \n", 1),
    ]
    outcome = run_outcome(
        events, sop_ref="x@1", session="room:x", reason="sop_complete", workspace=tmp_path
    )
    assert outcome.success is False
    assert outcome.failures == ("pm's reply at step 1 was empty",)


async def test_an_unrecovered_model_error_makes_a_run_not_a_success(settings: Settings) -> None:
    failing = [TimeoutError("upstream slow")] * 10  # more than any retry policy uses
    factory = scripted({"pm": [*failing, "{}"]})
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("err-1", "tech-article")
        started = await drain(room.start())
        assert started[-1].kind == EventKind.WAIT
        outcome = outcome_of(await drain(room.post("结束会议", author="author")))
        assert outcome["success"] is False
        assert any(
            f.startswith("pm 的模型在第 1 步出错，之后没有恢复") for f in outcome["failures"]
        )


def test_a_recovered_model_error_and_a_step_event_from_before_products_pass(tmp_path: Path) -> None:
    # A sop_step event written before steps declared products has no "produces" key.
    old_step = {"n": 1, "speakers": ["pm"], "do": "提纲", "tools": [], "fallback": None}
    events = [
        _event(EventKind.SOP_STEP, "system", old_step, 1),
        _event(EventKind.ERROR, "pm", {"error": "model_error", "detail": "503"}, 1),
        _event(EventKind.MESSAGE, "pm", "提纲如下……", 1),
    ]
    outcome = run_outcome(
        events, sop_ref="x@1", session="room:x", reason="sop_complete", workspace=tmp_path
    )
    assert outcome.success is True and outcome.failures == ()


def test_an_empty_product_file_is_no_product(tmp_path: Path) -> None:
    (tmp_path / "outline.md").write_text("  \n", encoding="utf-8")
    step = {"n": 1, "speakers": ["pm"], "do": "提纲", "tools": [], "produces": ["outline.md"]}
    events = [
        _event(EventKind.SOP_STEP, "system", step, 1),
        _event(EventKind.MESSAGE, "pm", "写好了", 1),
    ]
    outcome = run_outcome(
        events, sop_ref="x@1", session="room:x", reason="sop_complete", workspace=tmp_path
    )
    assert outcome.failures == ("step 1 (pm) left outline.md empty",)
    assert outcome.success is False


async def test_the_simulated_demo_run_on_the_shipped_sop_is_a_success(staff: Staffroom) -> None:
    room = await staff.room("demo-1", "tech-article")
    entry = (await drain(room.start()))[0]
    # The announcement tells each employee what its step must leave behind.
    assert "→ outline.md" in entry.content["announcement"]
    script = (ROOT / "scenarios" / "tech_article.script.txt").read_text(encoding="utf-8")
    line = next(x for x in script.splitlines() if x.startswith("author:"))
    outcome = outcome_of(await drain(room.post(line.split(":", 1)[1].strip(), author="author")))
    assert outcome["success"] is True and outcome["failures"] == []
    files = staff.sessions.workspace(SessionKey.parse(room.key)).list_files()
    assert {"outline.md", "draft.md", "figures.md"} <= set(files)


def test_the_cli_shows_why_a_run_failed() -> None:
    outcome = {
        "sop": "tech-article@1",
        "success": False,
        "score": None,
        "corrections": 0,
        "off_sop_turns": 0,
        "human_interventions": 1,
        "failures": ["step 1 (pm) did not produce outline.md"],
    }
    # Today's feedback event, and the plan event older logs hold: both render the same.
    for event in (
        make_event("room:x", EventKind.FEEDBACK, "system", outcome),
        make_event("room:x", EventKind.PLAN, "system", {"outcome": outcome}),
    ):
        out = io.StringIO()
        render_event(Console(file=out, width=200), event)
        assert "not a success" in out.getvalue()
        assert "✗ step 1 (pm) did not produce outline.md" in out.getvalue()


CARD = "---\nid: x\nversion: 1\nscope: global\ngoal: g\nsteps:\n  - speaker: pm\n    do: a\n"


@pytest.mark.parametrize(
    ("produces", "problem"),
    [
        ("[../secret.md]", "leaves the workspace"),
        ("[/etc/passwd]", "is absolute"),
        ('["C:\\\\notes.md"]', "is absolute"),
        ("[drafts/]", "is a folder"),
        ('[""]', "is empty"),
    ],
)
def test_a_bad_product_path_is_a_card_error_with_file_and_line(
    tmp_path: Path, produces: str, problem: str
) -> None:
    card = tmp_path / "v1.md"
    card.write_text(f"{CARD}    produces: {produces}\n---\n", encoding="utf-8")
    with pytest.raises(SopCardError, match=problem) as err:
        load_sop_card(card)
    assert (err.value.file, err.value.line) == (str(card), 9)
    assert err.value.field == "steps[0].produces[0]"


async def test_products_round_trip_through_card_store_and_export(tmp_path: Path) -> None:
    steps = (Step(("pm",), "提纲", tools=("write_file",), produces=("docs/outline.md",)),)
    version = SopVersion("x", 1, "g", "global", steps, status=Status.PUBLISHED)
    text = version_to_card_text(version)
    assert '    produces: ["docs/outline.md"]\n' in text
    card = tmp_path / "lib" / "x" / "v1.md"
    card.parent.mkdir(parents=True)
    card.write_text(text, encoding="utf-8")
    store = await SopStore.open(tmp_path / "data")
    try:
        await import_library(store, tmp_path / "lib")
        stored = await store.get("x", 1)
        assert stored.steps[0].produces == ("docs/outline.md",)
        assert version_to_card_text(stored) == text
    finally:
        await store.close()


async def test_a_store_from_before_products_takes_the_shipped_cards_products(
    tmp_path: Path,
) -> None:
    store = await SopStore.open(tmp_path / "data")
    try:
        shipped = load_sop_card(LIBRARY / "tech_article" / "v1.md")
        new = card_to_version(shipped)
        old = replace(new, steps=tuple(replace(s, produces=()) for s in new.steps))
        await store.add_version(old)
        report = await import_library(store, LIBRARY)
        assert report.updated == ["tech-article@1"]
        stored = await store.get("tech-article", 1)
        assert [s.produces for s in stored.steps] == [
            ("outline.md",),
            ("draft.md",),
            ("figures.md",),
            (),
        ]
        assert "tech-article@1" in (await import_library(store, LIBRARY)).skipped
    finally:
        await store.close()


def test_an_edit_keeps_the_products_and_the_diff_shows_them() -> None:
    old = (Step(("pm",), "立题与提纲", tools=("write_file",), produces=("outline.md",)),)
    reworded = Step(("pm",), "只写提纲", tools=("write_file",))  # as a model reviser builds it
    new = apply_edits(old, [EditOp("edit", 0, step=reworded, reason="r")])
    assert new[0].produces == ("outline.md",) and new[0].do == "只写提纲"
    diff = diff_steps(old, new)
    assert "- 1. pm: 立题与提纲 [tools: write_file] → outline.md" in diff
    assert "+ 1. pm: 只写提纲 [tools: write_file] → outline.md" in diff


# outcomes as the store created it before runs recorded failures
OLD_OUTCOMES = """
CREATE TABLE outcomes (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    sop_ref             TEXT    NOT NULL,
    session             TEXT    NOT NULL,
    user                TEXT    NOT NULL DEFAULT '',
    success             INTEGER NOT NULL CHECK (success IN (0, 1)),
    score               REAL,
    duration_s          REAL    NOT NULL DEFAULT 0,
    off_sop_turns       INTEGER NOT NULL DEFAULT 0,
    human_interventions INTEGER NOT NULL DEFAULT 0,
    at                  TEXT    NOT NULL,
    corrections         TEXT    NOT NULL DEFAULT '[]',
    UNIQUE (sop_ref, session, at)
);
INSERT INTO outcomes (sop_ref, session, success, at) VALUES ('x@1', 'room:old', 1, 't1');
"""


async def test_a_database_from_before_failures_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "sops.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(OLD_OUTCOMES)
    conn.close()
    for _ in range(2):  # the column is added once, then found on every later open
        store = await SopStore.open(path)
        await store.close()
    store = await SopStore.open(path)
    try:
        await store.add_version(SopVersion("x", 1, "g", "global", (Step(("pm",), "a"),)))
        failed = Outcome("x@1", "room:new", False, at="t2", failures=("pm's reply was empty",))
        await store.record_outcome(failed)
        old, new = await store.outcomes("x@1")
        assert (old.session, old.success, old.failures) == ("room:old", True, ())
        assert new == replace(failed, user="")
        assert (await store.metrics("x@1")).runs == 2
    finally:
        await store.close()


async def _store_runs(data: Path, reason: str) -> None:
    store = await SopStore.open(data)
    try:
        await import_library(store, LIBRARY)
        for n in range(2):
            lacking = Outcome("tech-article@1", f"room:r{n}", False, at=f"t{n}", failures=(reason,))
            await store.record_outcome(lacking)
        await store.record_outcome(Outcome("tech-article@1", "room:ok", True, at="t9"))
    finally:
        await store.close()


def test_sop_metrics_and_report_show_runs_lacking_evidence(tmp_path: Path) -> None:
    reason = "step 1 (pm) did not produce outline.md"
    asyncio.run(_store_runs(tmp_path / "data", reason))  # the CLI runs its own event loop
    data = ["sop", "--data-dir", str(tmp_path / "data"), "--project", str(ROOT)]
    metrics = CliRunner().invoke(app, [*data, "metrics", "tech-article"])
    assert metrics.exit_code == 0, metrics.output
    assert "lacking evidence" in metrics.output and "2/3" in metrics.output
    report = CliRunner().invoke(app, [*data, "report", "tech-article"])
    assert f"2x no evidence: {reason}" in report.output
