"""``knowledge add`` writes a person's note into an employee's topic files, and ``knowledge
list`` without ``-e`` lists every employee's topics and the library's (it used to say "no
topic files yet" while an employee had two)."""

from __future__ import annotations

from pathlib import Path

from cli_in_process import Cli


def test_added_notes_are_listed_for_everyone_and_found(cli: Cli, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "d"))
    rule = "Page the on-call engineer for any HTTP 5xx from checkout."
    first = cli("knowledge", "add", "escalation rules", rule, "-e", "engineer", *data)
    assert first.code == 0, first.err
    assert "engineer's learning/escalation-rules" in first.out and rule in first.out
    tier = ("knowledge", "add", "acme", "Acme Corp is on the enterprise tier.", "-e", "engineer")
    assert cli(*tier, "--category", "customers", *data).code == 0
    shared = ("knowledge", "add", "glossary", "P1 means checkout is down.", "--library", "shared")
    assert cli(*shared, *data).code == 0

    again = cli("knowledge", "add", "escalation rules", rule, "-e", "engineer", *data)
    assert again.code == 0 and "nothing written" in again.out

    listed = cli("knowledge", "list", *data)
    assert listed.code == 0, listed.err
    rows = [line for line in listed.out.splitlines() if "│" in line]
    assert sum("engineer" in row for row in rows) == 2, listed.out
    assert any("library:shared" in row and "glossary" in row for row in rows), listed.out
    only = cli("knowledge", "list", "-e", "pm", *data)
    assert "no topic files yet" in only.out

    found = cli("search", "on-call 5xx", "-e", "engineer", *data)
    assert found.code == 0 and "escalation-rules" in found.out, found.out


def test_a_note_for_no_such_employee_is_refused(cli: Cli, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path / "d"))
    typo = cli("knowledge", "add", "x", "a note", "-e", "enginer", *data)
    assert typo.code == 2 and "did you mean 'engineer'" in typo.err, typo.err
    nobody = cli("knowledge", "add", "x", "a note", *data)
    assert nobody.code == 2 and "-e EMPLOYEE" in nobody.err
    assert not (tmp_path / "d" / "knowledge").exists(), "nothing was written"
