"""The ``staffroom`` command as a user runs it: real subprocesses, real files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cli_in_process import Cli
from paths import ROOT

USER_SCENARIO = ROOT / "tests" / "fixtures" / "user_scenario" / "scenarios" / "launch_review.yaml"
BAD = ROOT / "tests" / "fixtures" / "bad"


def test_run_sample_scenario_to_the_end_of_its_sop(cli: Cli, tmp_path: Path) -> None:
    script = ROOT / "scenarios" / "tech_article.script.txt"
    done = cli("run", "tech-article", "--room", "demo", "--script", str(script), data=tmp_path)
    assert done.code == 0, done.err
    assert "simulated" in done.out and "test double" in done.out
    assert "ended: sop_complete" in done.out
    assert (tmp_path / "sessions" / "room:demo.jsonl").exists()
    assert (tmp_path / "workspaces" / "room:demo" / "outline.md").exists()
    assert (tmp_path / "checkpoints.sqlite").exists()

    shown = cli("history", "room:demo", data=tmp_path)
    assert shown.code == 0
    assert "step 4" in shown.out and "sop_complete" in shown.out


def test_a_user_written_scenario_runs_with_no_code_change(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "lines.txt"
    script.write_text("release-owner: Rollback plan looks solid.\n", encoding="utf-8")
    args = ("run", str(USER_SCENARIO), "--room", "lr", "--script", str(script))
    done = cli(*args, data=tmp_path)
    assert done.code == 0, done.err
    assert "launch-review@1" in done.out and "ended: sop_complete" in done.out


def test_run_without_script_stops_at_the_wait_and_resumes_later(cli: Cli, tmp_path: Path) -> None:
    first = cli("run", "tech-article", "--room", "r2", data=tmp_path)
    assert first.code == 0, first.err
    assert "waiting for author" in first.out and "--room r2" in first.out
    script = tmp_path / "s.txt"
    script.write_text("继续\n", encoding="utf-8")
    second = cli("run", "tech-article", "--room", "r2", "--script", str(script), data=tmp_path)
    assert second.code == 0, second.err
    assert "ended: sop_complete" in second.out
    assert "step 1" not in second.out  # nothing already done is run again


def test_two_runs_in_one_second_open_two_rooms(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import framework.surfaces.cli.run as run_cli

    class SameSecond(datetime):
        @classmethod
        def now(cls, tz: object = None) -> SameSecond:
            return cls(2026, 1, 1, 9, 30, tzinfo=UTC)

    monkeypatch.setattr(run_cli, "datetime", SameSecond)
    runs = [cli("run", "tech-article", data=tmp_path) for _ in range(2)]
    assert [done.code for done in runs] == [0, 0], [done.err for done in runs]
    rooms = sorted(p.stem for p in (tmp_path / "sessions").glob("room:*.jsonl"))
    assert len(rooms) == 2, rooms
    assert all(room.startswith("room:tech-article-20260101-093000-") for room in rooms), rooms
    # Each run says which room it opened (and the second did not resume the first).
    assert {runs[0].out.split()[1], runs[1].out.split()[1]} == set(rooms)
    assert all("step 1" in done.out for done in runs)


def test_a_taken_room_id_is_drawn_again() -> None:
    from framework.surfaces.cli.run import new_room_id

    drawn: list[str] = []

    def taken(room_id: str) -> bool:
        drawn.append(room_id)
        return len(drawn) == 1  # the first draw is someone's room already

    room_id = new_room_id("escalation", taken)
    assert len(drawn) == 2 and room_id == drawn[1] != drawn[0]


def test_dm_reads_lines_from_stdin(cli: Cli, tmp_path: Path) -> None:
    done = cli("dm", "engineer", "--user", "alice", data=tmp_path, stdin="hi\nhow are you?\n")
    assert done.code == 0, done.err
    assert done.out.count("(DM)") == 2
    log = tmp_path / "sessions" / "dm:alice@engineer.jsonl"
    kinds = [json.loads(line)["kind"] for line in log.read_text(encoding="utf-8").splitlines()]
    assert kinds.count("message") == 4


def test_history_reports_a_broken_line_and_keeps_it(cli: Cli, tmp_path: Path) -> None:
    cli("dm", "pm", "--user", "bob", data=tmp_path, stdin="hello\n")
    log = tmp_path / "sessions" / "dm:bob@pm.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    lines.insert(1, "{this is not json")
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    shown = cli("history", "dm:bob@pm", data=tmp_path)
    assert shown.code == 0
    assert "dm:bob@pm.jsonl:2" in shown.out  # file and line of the broken line
    assert "{this is not json" in log.read_text(encoding="utf-8")


def test_user_mistakes_get_clear_errors_without_tracebacks(cli: Cli, tmp_path: Path) -> None:
    unknown = cli("run", "tech-artcle", data=tmp_path)
    assert unknown.code == 2
    assert "tech-article" in unknown.err  # did you mean
    bad = cli("run", str(BAD / "unknown_employee.yaml"), data=tmp_path)
    assert bad.code == 2
    assert "unknown_employee.yaml:" in bad.err and "desginer" in bad.err
    for result in (unknown, bad):
        assert "Traceback" not in result.err + result.out


def test_validate_and_schema(cli: Cli, tmp_path: Path) -> None:
    ok = cli("validate", "agents", "scenarios", "sop_library")
    assert ok.code == 0, ok.out
    bad = cli("validate", str(BAD / "unknown_employee.yaml"), str(BAD / "yaml_syntax.yaml"))
    assert bad.code == 1
    assert "did you mean 'designer'" in bad.out
    assert "yaml_syntax.yaml:" in bad.out
    schema = cli("schema", "scenario")
    assert schema.code == 0
    assert json.loads(schema.out)["title"] == "Scenario"


def test_interactive_run_asks_when_the_room_waits(cli: Cli, tmp_path: Path) -> None:
    done = cli(
        "run", "tech-article", "--room", "i1", "--interactive", data=tmp_path, stdin="继续吧\n"
    )
    assert done.code == 0, done.err
    assert "author (human): 继续吧" in done.out
    assert "ended: sop_complete" in done.out
