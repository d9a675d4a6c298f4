"""The ``staffroom`` command as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import ROOT

USER_SCENARIO = ROOT / "tests" / "fixtures" / "user_scenario" / "scenarios" / "launch_review.yaml"
BAD = ROOT / "tests" / "fixtures" / "bad"


def staffroom(
    *args: str, data: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "framework", *args]
    if data is not None:
        cmd += ["--data-dir", str(data)]
    return subprocess.run(
        cmd, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def test_run_sample_scenario_to_the_end_of_its_sop(tmp_path: Path) -> None:
    script = ROOT / "scenarios" / "tech_article.script.txt"
    done = staffroom(
        "run", "tech-article", "--room", "demo", "--script", str(script), data=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "simulated" in done.stdout and "test double" in done.stdout
    assert "ended: sop_complete" in done.stdout
    assert (tmp_path / "sessions" / "room:demo.jsonl").exists()
    assert (tmp_path / "workspaces" / "room:demo" / "outline.md").exists()
    assert (tmp_path / "checkpoints.sqlite").exists()

    shown = staffroom("history", "room:demo", data=tmp_path)
    assert shown.returncode == 0
    assert "step 4" in shown.stdout and "sop_complete" in shown.stdout


def test_a_user_written_scenario_runs_with_no_code_change(tmp_path: Path) -> None:
    script = tmp_path / "lines.txt"
    script.write_text("release-owner: Rollback plan looks solid.\n", encoding="utf-8")
    args = ("run", str(USER_SCENARIO), "--room", "lr", "--script", str(script))
    done = staffroom(*args, data=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "launch-review@1" in done.stdout and "ended: sop_complete" in done.stdout


def test_run_without_script_stops_at_the_wait_and_resumes_later(tmp_path: Path) -> None:
    first = staffroom("run", "tech-article", "--room", "r2", data=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "waiting for author" in first.stdout and "--room r2" in first.stdout
    script = tmp_path / "s.txt"
    script.write_text("继续\n", encoding="utf-8")
    second = staffroom(
        "run", "tech-article", "--room", "r2", "--script", str(script), data=tmp_path
    )
    assert second.returncode == 0, second.stderr
    assert "ended: sop_complete" in second.stdout
    assert "step 1" not in second.stdout  # nothing already done is run again


def test_dm_reads_lines_from_stdin(tmp_path: Path) -> None:
    done = staffroom("dm", "engineer", "--user", "alice", data=tmp_path, stdin="hi\nhow are you?\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(DM)") == 2
    log = tmp_path / "sessions" / "dm:alice@engineer.jsonl"
    kinds = [json.loads(line)["kind"] for line in log.read_text(encoding="utf-8").splitlines()]
    assert kinds.count("message") == 4


def test_history_reports_a_broken_line_and_keeps_it(tmp_path: Path) -> None:
    staffroom("dm", "pm", "--user", "bob", data=tmp_path, stdin="hello\n")
    log = tmp_path / "sessions" / "dm:bob@pm.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    lines.insert(1, "{this is not json")
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown = staffroom("history", "dm:bob@pm", data=tmp_path)
    assert shown.returncode == 0
    assert "dm:bob@pm.jsonl:2" in shown.stdout  # file and line of the broken line
    assert "{this is not json" in log.read_text(encoding="utf-8")


def test_user_mistakes_get_clear_errors_without_tracebacks(tmp_path: Path) -> None:
    unknown = staffroom("run", "tech-artcle", data=tmp_path)
    assert unknown.returncode == 2
    assert "tech-article" in unknown.stderr  # did you mean
    bad = staffroom("run", str(BAD / "unknown_employee.yaml"), data=tmp_path)
    assert bad.returncode == 2
    assert "unknown_employee.yaml:" in bad.stderr and "desginer" in bad.stderr
    for result in (unknown, bad):
        assert "Traceback" not in result.stderr + result.stdout


def test_validate_and_schema(tmp_path: Path) -> None:
    ok = staffroom("validate", "agents", "scenarios", "sop_library")
    assert ok.returncode == 0, ok.stdout
    bad = staffroom("validate", str(BAD / "unknown_employee.yaml"), str(BAD / "yaml_syntax.yaml"))
    assert bad.returncode == 1
    assert "did you mean 'designer'" in bad.stdout
    assert "yaml_syntax.yaml:" in bad.stdout
    schema = staffroom("schema", "scenario")
    assert schema.returncode == 0
    assert json.loads(schema.stdout)["title"] == "Scenario"


def test_interactive_run_asks_when_the_room_waits(tmp_path: Path) -> None:
    done = staffroom(
        "run", "tech-article", "--room", "i1", "--interactive", data=tmp_path, stdin="继续吧\n"
    )
    assert done.returncode == 0, done.stderr
    assert "author (human): 继续吧" in done.stdout
    assert "ended: sop_complete" in done.stdout
