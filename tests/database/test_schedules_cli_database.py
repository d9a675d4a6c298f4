"""`staffroom schedules --database URL`: the fire ledger on PostgreSQL, from the command line."""

from __future__ import annotations

from pathlib import Path

from cli_in_process import Cli
from schedule_sim import copy_project

SCHEDULES = """\
schedules:
  check:
    cron: "0 8 * * *"
    start: {dm: {employee: pm, user: lead, message: "Morning: status?"}}
"""


def test_run_now_and_history_on_the_database(cli: Cli, tmp_path: Path, pg_url: str) -> None:
    project = tmp_path / "project"
    copy_project(project)
    (project / "schedules.yaml").write_text(SCHEDULES, encoding="utf-8")
    opts = ("--data-dir", str(tmp_path / "data"), "--project", str(project), "--database", pg_url)
    ran = cli("schedules", *opts, "run-now", "check", "--id", "cli", cwd=tmp_path)
    assert ran.code == 0 and "check@now-cli: done" in ran.out, ran.out + ran.err
    again = cli("schedules", *opts, "run-now", "check", "--id", "cli", cwd=tmp_path)
    assert again.code == 0 and "has run already" in again.out, again.out + again.err
    history = cli("schedules", *opts, "history", cwd=tmp_path)
    assert history.code == 0 and history.out.count("check@now-cli") == 1, history.out
    assert not (tmp_path / "data" / "schedules.sqlite").exists()  # the ledger is the database's
