"""The CLI's own labels outside the transcript (tables, headings, summary lines) follow the
project's language as the transcript does: ``$STAFFROOM_LANGUAGE``, else ``language:`` in the
project's ``staffroom.yaml``, else English; ids and people's text are shown as they are.
And a late-feedback outcome line says only what the framework knows, never ``None``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from cli_in_process import Cli

from framework.sessions.events import Event, EventKind
from framework.surfaces.cli.console import LabelConsole
from framework.surfaces.cli.render import render_event

ENGLISH = ["mean s", "last review", "no memory yet", "no problems found", ": valid"]
ENGLISH += ["Use the recurring corrections", "hit rate per user", "lacking evidence", ", score "]
CHINESE = ["版本", "成功率", "平均秒数", "所属", "上次审阅", "还没有记忆", "已检查"]
CHINESE += ["没有发现问题", "：有效", "用反复出现的纠正", "，得分 "]


def project_with_a_run(cli: Cli, tmp_path: Path) -> tuple[Path, list[str]]:
    """An ``init`` project whose room ran once and whose writer has a note; its options."""
    project = tmp_path / "team"
    assert cli("init", str(project)).code == 0
    opts = ["--project", str(project), "--data-dir", str(tmp_path / "data")]
    script = str(project / "scenarios" / "note.script.txt")
    ran = cli("run", "note", *opts, "--room", "r1", "--message", "Topic: x", "--script", script)
    assert ran.code == 0, ran.out + ran.err
    added = cli("knowledge", "add", "escalation", "Page on-call for 5xx.", "-e", "writer", *opts)
    assert added.code == 0, added.out + added.err
    return project, opts


def labels(cli: Cli, project: Path, opts: list[str], env: dict[str, str]) -> str:
    """What the commands with their own labels print."""
    said = [
        cli("sop", *opts, "list", env=env),
        cli("sop", *opts, "metrics", "note", env=env),
        cli("sop", *opts, "report", "note", env=env),
        cli("knowledge", "list", *opts, env=env),
        cli("search", "on-call", "-e", "writer", *opts, env=env),
        cli("memory", "writer", "--user", "nobody", *opts, env=env),
        cli("doctor", *opts, env=env),
        cli("validate", str(project), *opts, env=env),
    ]
    for result in said:
        assert result.code == 0, result.out + result.err
    return "\n".join(result.out for result in said)


@pytest.mark.parametrize("where", ["default", "environment", "project"])
def test_tables_and_summaries_follow_the_projects_language(
    cli: Cli, tmp_path: Path, where: str
) -> None:
    project, opts = project_with_a_run(cli, tmp_path)
    env = {"STAFFROOM_LANGUAGE": "zh"} if where == "environment" else {}
    if where == "project":
        (project / "staffroom.yaml").write_text("language: zh\n", encoding="utf-8")
    out = labels(cli, project, opts, env)
    expected, other = (ENGLISH, CHINESE) if where == "default" else (CHINESE, ENGLISH)
    missing = [label for label in expected if label not in out]
    assert not missing, f"labels not shown: {missing}\n{out}"
    assert not [label for label in other if label in out], out
    # Ids, names and people's words are data: the same in both.
    assert "note" in out and "writer" in out and "escalation" in out


def test_the_environment_wins_over_the_project(cli: Cli, tmp_path: Path) -> None:
    project, opts = project_with_a_run(cli, tmp_path)
    (project / "staffroom.yaml").write_text("language: zh\n", encoding="utf-8")
    out = cli("sop", *opts, "list", env={"STAFFROOM_LANGUAGE": "en"}).out
    assert "version" in out and "版本" not in out


def test_late_feedback_says_only_what_it_knows(cli: Cli, tmp_path: Path) -> None:
    _, opts = project_with_a_run(cli, tmp_path)
    correction = 'correction: missing editor "Check every number" before 2'
    corrected = cli("run", "note", *opts, "--room", "r1", "--message", correction)
    assert corrected.code == 0, corrected.out + corrected.err
    # No score yet, and no turn counts: a late outcome holds only its corrections.
    line = "◆ outcome of note@1 after late feedback: not a success (corrections 1)"
    assert line in corrected.out, corrected.out
    scored = cli("run", "note", *opts, "--room", "r1", "--message", "Score: 2/5")
    assert "after late feedback: not a success, score 0.40 (corrections 1)" in scored.out
    shown = cli("history", "room:r1", *opts)
    assert shown.code == 0 and line in shown.out
    for text in (corrected.out, scored.out, shown.out):
        assert "None" not in text and "undefined" not in text

    log = tmp_path / "data" / "sessions" / "room:r1.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    late = [
        Event.from_dict(r)
        for r in records
        if r["kind"] == EventKind.FEEDBACK and r["content"].get("late")
    ]
    assert [e.content.get("score") for e in late] == [None, 0.4]  # as the framework wrote them
    out = io.StringIO()
    for event in late:
        render_event(LabelConsole(file=out, width=100, language="zh"), event)
    assert "◆ 补充反馈后 note@1 的结果：未成功（纠正 1 次）" in out.getvalue()
    assert "未成功，评分 0.40（纠正 1 次）" in out.getvalue()
