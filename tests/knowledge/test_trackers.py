"""Trackers (layer 3): tasks, goals, reflections, proposals; only "forget" deletes."""

from __future__ import annotations

import json
from datetime import date
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest
from at_once import run_at_once

from framework.errors import InputError
from framework.knowledge.tracker_items import Reflection, Task, next_due
from framework.knowledge.trackers import Trackers

DAY = date(2026, 5, 30)


def trackers(root: Path, day: date = DAY) -> Trackers:
    return Trackers(root, today=lambda: day)


def test_adding_the_same_task_again_notes_it_instead_of_a_twin(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    first = t.add_task("pm", "拿到跳出率前 10 的页面数据", priority="high", source="dm:alice@pm")
    assert (first.outcome, first.item.id, first.item.status) == ("created", "t-001", "open")

    # Case, spacing, punctuation and full-width forms do not make another task.
    for again in ("  拿到跳出率前10的页面数据！", "拿到跳出率前１０的页面数据。"):
        added = t.add_task("pm", again, source="room:r2")
        assert (added.outcome, added.item.id) == ("merged", "t-001")
    assert t.add_task("pm", "Write the OUTLINE").item.id == "t-002"
    assert t.add_task("pm", "write   the outline.").outcome == "merged"

    tasks = t.tasks("pm")
    assert [task.id for task in tasks] == ["t-001", "t-002"]
    assert [n.note for n in tasks[0].notes] == ["mentioned again (from room:r2)"] * 2


def test_a_closed_task_is_reopened_only_when_asked(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    t.add_task("pm", "send the weekly report")
    t.finish("pm", "tasks", "t-001", note="sent")

    closed = t.add_task("pm", "Send the weekly report")
    assert (closed.outcome, closed.item.status) == ("closed", "done")
    reopened = t.add_task("pm", "Send the weekly report", reopen=True)
    assert (reopened.outcome, reopened.item.id, reopened.item.status) == (
        "reopened",
        "t-001",
        "open",
    )
    assert [n.note for n in t.tasks("pm")[0].notes] == [
        "open → done: sent",
        "done → open: reopened",
    ]


def test_status_changes_are_kept_as_dated_notes(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    t.add_task("pm", "拿到数据", type="think")
    task = t.set_status("pm", "tasks", "t-001", "waiting", waiting_for="alice")
    assert isinstance(task, Task)
    assert (task.status, task.waiting_for) == ("waiting", "alice")
    t.abandon("pm", "tasks", "t-001", note="alice left")

    stored = t.tasks("pm")[0]
    assert (stored.status, stored.waiting_for) == ("abandoned", None)
    assert [(n.date, n.note) for n in stored.notes] == [
        (DAY, "open → waiting (for alice)"),
        (DAY, "waiting → abandoned: alice left"),
    ]
    with pytest.raises(InputError) as caught:
        t.set_status("pm", "tasks", "t-001", "finished")
    assert caught.value.field == "status" and "done" in (caught.value.fix or "")
    with pytest.raises(InputError, match="no item 't-9'"):
        t.finish("pm", "tasks", "t-9")


def test_goals_keep_progress(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    goal = t.add_goal("pm", "内容质量打分系统", target_date=date(2026, 6, 30), note="框架已搭建")
    t.add_note("pm", "goals", goal.item.id, "首次审计：博客 79 分，首页 38 分")
    assert t.add_goal("pm", "内容质量打分系统", note="跳出率优先").outcome == "merged"
    t.finish("pm", "goals", goal.item.id)

    stored = t.goals("pm")[0]
    assert stored.status == "done" and stored.target_date == date(2026, 6, 30)
    assert [n.note for n in stored.progress] == [
        "框架已搭建",
        "首次审计：博客 79 分，首页 38 分",
        "跳出率优先",
        "open → done",
    ]


def test_reflections_fall_due_by_interval(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    t.add_reflection("pm", "回顾两周日志：哪些有效", interval="biweekly")
    t.add_reflection("pm", "看看客户反馈", interval="10d")
    assert t.due("pm", date(2026, 6, 8)) == []
    assert [r.id for r in t.due("pm", date(2026, 6, 9))] == ["r-002"]
    assert [r.id for r in t.due("pm", date(2026, 6, 13))] == ["r-001", "r-002"]

    t.mark_run("pm", "r-001", day=date(2026, 6, 13))
    assert [r.id for r in t.due("pm", date(2026, 6, 13))] == ["r-002"]
    assert next_due(t.reflections("pm")[0]) == date(2026, 6, 27)
    t.abandon("pm", "reflections", "r-002")
    assert t.due("pm", date(2027, 1, 1)) == [t.reflections("pm")[0]]

    with pytest.raises(InputError) as caught:
        t.add_reflection("pm", "x", interval="fortnightly")
    assert caught.value.field == "interval"


def test_monthly_is_a_calendar_month() -> None:
    def due(last: date) -> date:
        return next_due(
            Reflection(id="r-1", what="x", interval="monthly", created=last, updated=last)
        )

    assert due(date(2026, 1, 31)) == date(2026, 2, 28)
    assert due(date(2026, 12, 15)) == date(2027, 1, 15)


def test_proposals_wait_for_a_person(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    made = t.add_proposal(
        "analyst", ["writer"], "博客 79 分，首页 38 分", "审核阶段增加 7 项检查清单"
    )
    assert made.item.id == "p-001"
    assert t.add_proposal("analyst", ["writer"], "again", "审核阶段增加7项检查清单！").outcome == (
        "merged"
    )
    assert t.add_proposal("analyst", ["editor"], "o", "审核阶段增加7项检查清单").item.id == "p-002"
    assert [p.id for p in t.open_items("writer").proposals] == ["p-001"]

    decided = t.decide("p-001", approve=True, by="alice", note="下周起执行")
    assert (decided.status, decided.decided_by, decided.decided_at) == ("approved", "alice", DAY)
    with pytest.raises(InputError, match="already approved by alice"):
        t.decide("p-001", approve=False, by="bob")
    assert t.open_items("writer").proposals == []

    raw = json.loads((tmp_path / "proposals.json").read_text(encoding="utf-8"))
    assert raw["items"][0]["for"] == ["writer"]


def test_open_items_are_what_a_session_starts_with(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    t.add_task("pm", "low one", priority="low")
    t.add_task("pm", "high one", priority="high")
    t.add_task("pm", "done one")
    t.finish("pm", "tasks", "t-003")
    t.add_task("pm", "waiting one", waiting_for="alice")
    t.add_goal("pm", "a goal")

    items = t.open_items("pm")
    assert [task.task for task in items.tasks] == ["high one", "waiting one", "low one"]
    assert [goal.goal for goal in items.goals] == ["a goal"]
    assert items.reflections == [] and items.proposals == []
    assert t.open_items("nobody").tasks == []


def test_the_files_read_well_and_survive_a_round_trip(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    t.add_task("pm", "拿到数据", source="dm:alice@pm", note="从复盘抽取")
    text = (tmp_path / "pm" / "tasks.json").read_text(encoding="utf-8")
    assert '"task": "拿到数据"' in text  # not \\u escapes
    assert '{"date": "2026-05-30", "note": "从复盘抽取"}' in text  # a note is one line
    assert list(json.loads(text)["items"][0]) == [
        "id",
        "status",
        "task",
        "type",
        "priority",
        "waiting_for",
        "notes",
        "created",
        "updated",
        "source",
    ]


def test_forget_removes_exactly_what_matches(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    t.add_task("pm", "call alice at 138-0000")
    t.add_task("pm", "write the outline", note="ask Alice first")
    t.add_task("pm", "unrelated")
    t.add_goal("writer", "finish the alice interview")
    t.add_proposal("pm", ["writer"], "alice said so", "shorter emails")

    removed = t.remove_matching("ALICE", employee="pm")
    assert sorted((r.kind, r.employee, r.item.id) for r in removed) == [
        ("proposals", None, "p-001"),
        ("tasks", "pm", "t-001"),
        ("tasks", "pm", "t-002"),
    ]
    assert [task.id for task in t.tasks("pm")] == ["t-003"]
    assert len(t.goals("writer")) == 1  # another employee's, not asked for

    everywhere = t.remove_matching(lambda item: "interview" in item.text)
    assert [(r.kind, r.employee, r.item.id) for r in everywhere] == [("goals", "writer", "g-001")]
    with pytest.raises(InputError):
        t.remove_matching("!!")  # no words: would match everything


def test_bad_input_names_the_field(tmp_path: Path) -> None:
    t = trackers(tmp_path)
    with pytest.raises(InputError) as caught:
        t.add_task("pm", "   ")
    assert caught.value.field == "task"
    with pytest.raises(InputError) as caught:
        t.add_task("../pm", "x")
    assert caught.value.field == "employee"
    with pytest.raises(InputError) as caught:
        t.add_proposal("pm", ["a/b"], "o", "r")
    assert caught.value.field == "for"
    assert not any(tmp_path.rglob("*.json"))


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ('{"format": 1, "items": [\n  {"id": "t-001" "task": "x"}\n]}\n', 2, None),
        (
            '{\n  "format": 1,\n  "items": [\n    {\n      "id": "t-001",\n'
            '      "status": "finished",\n      "task": "x",\n'
            '      "created": "2026-05-30",\n      "updated": "2026-05-30"\n    }\n  ]\n}\n',
            6,
            "items[0].status",
        ),
        (
            '{"format": 1, "items": [\n'
            '  {"id": "t-1", "task": "a", "status": "open", "created": "2026-05-30", '
            '"updated": "2026-05-30"},\n'
            '  {"id": "t-1", "task": "b", "status": "open", "created": "2026-05-30", '
            '"updated": "2026-05-30"}\n]}\n',
            3,
            "items[1].id",
        ),
        (
            '{"format": 1, "items": [\n  {"id": "t-1", "task": "a", "status": "open", '
            '"created": "2026-05-30", "updated": "2026-05-30", "owner": "x"}\n]}\n',
            2,
            "items[0].owner",
        ),
    ],
)
def test_a_hand_broken_tracker_names_file_line_field_and_is_not_touched(
    tmp_path: Path, text: str, line: int, field: str | None
) -> None:
    path = tmp_path / "pm" / "tasks.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    t = trackers(tmp_path)

    with pytest.raises(InputError) as caught:
        t.tasks("pm")
    assert (caught.value.file, caught.value.line, caught.value.field) == (str(path), line, field)
    assert caught.value.fix

    for write in (
        lambda: t.add_task("pm", "new"),
        lambda: t.finish("pm", "tasks", "t-001"),
        lambda: t.remove_matching("x", employee="pm"),
    ):
        with pytest.raises(InputError):
            write()
    assert path.read_text(encoding="utf-8") == text


WORKERS, PER_WORKER, SHARED = 4, 12, 6


def add_tasks(root: str, worker: int, go: Event) -> None:
    t = Trackers(Path(root), today=lambda: DAY)
    go.wait()
    for n in range(PER_WORKER):
        t.add_task("pm", f"task {worker}-{n}")
        if n < SHARED:
            t.add_task("pm", f"Shared task {n}!")  # every worker adds these: one each in the end


def test_processes_adding_at_once_lose_nothing_and_make_no_twins(tmp_path: Path) -> None:
    run_at_once(add_tasks, str(tmp_path), WORKERS)

    tasks = trackers(tmp_path).tasks("pm")
    own = {f"task {w}-{n}" for w in range(WORKERS) for n in range(PER_WORKER)}
    shared = [task for task in tasks if task.task.startswith("Shared")]
    assert {task.task for task in tasks} - {task.task for task in shared} == own
    assert len(tasks) == len(own) + SHARED
    assert len({task.id for task in tasks}) == len(tasks)
    assert all(len(task.notes) == WORKERS - 1 for task in shared)
