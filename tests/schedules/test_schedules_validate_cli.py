"""``staffroom validate`` checks schedules.yaml like every other file: file:line, field, fix,
and the scenarios and employees it names against the project."""

from __future__ import annotations

import json
from pathlib import Path

from cli_in_process import Cli

GOOD = """\
timezone: Europe/Berlin
schedules:
  note:
    cron: "30 9 * * mon-fri"
    start:
      room: {scenario: note, message: "Write today's note"}
"""


def test_validate_reports_a_broken_schedules_file(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert cli("init", str(project), cwd=tmp_path).code == 0
    schedules = project / "schedules.yaml"
    schedules.write_text(GOOD, encoding="utf-8")
    assert cli("validate", str(project), cwd=tmp_path).code == 0
    schedules.write_text(GOOD.replace("mon-fri", "mon-fry"), encoding="utf-8")
    broken = cli("validate", str(project), cwd=tmp_path)
    assert broken.code == 1
    assert f"{schedules}:4 schedules.note.cron" in broken.out and "day-of-week" in broken.out
    assert "1 problem(s)" in broken.out
    schedules.write_text(GOOD.replace("scenario: note", "scenario: note2"), encoding="utf-8")
    unknown = cli("validate", str(project), cwd=tmp_path)
    assert unknown.code == 1 and f"{schedules}:6" in unknown.out
    assert "unknown scenario 'note2' (did you mean 'note'?)" in unknown.out
    # Validating only some of the project's folders still checks its schedules, once.
    some = cli("validate", "agents", cwd=project, env={"STAFFROOM_PROJECT": str(project)})
    assert some.code == 1 and some.out.count("unknown scenario 'note2'") == 1, some.out


def test_schema_prints_the_schedules_schema(cli: Cli) -> None:
    printed = cli("schema", "schedules")
    assert printed.code == 0
    schema = json.loads(printed.out)
    assert schema["title"] == "SchedulesFile"
    assert "cron" in schema["$defs"]["ScheduleSpec"]["properties"]
