"""Careless and hostile input to the ``staffroom`` command: a clear error naming what to fix
(file:line, the option or the variable), exit 2, never a traceback, and nothing half-run."""

from __future__ import annotations

import json
from pathlib import Path

from cli_in_process import Cli, CliResult
from paths import ROOT

from framework.sessions.events import EventKind, make_event


def refused(done: CliResult, *must: str) -> str:
    """The error text, after checking exit 2, no traceback and that it says ``must``."""
    assert done.code == 2, (done.code, done.out[-2000:], done.err[-2000:])
    assert "Traceback" not in done.err + done.out
    for text in must:
        assert text in done.err, (text, done.err)
    return done.err


def test_a_missing_folder_or_non_utf8_script_is_refused_before_the_room_runs(
    cli: Cli,
    tmp_path: Path,
) -> None:
    gbk = tmp_path / "gbk.txt"
    gbk.write_bytes("author: 继续\n".encode("gbk"))
    data = tmp_path / "data"
    cases = {
        "missing": (tmp_path / "nope.txt", "no such script file"),
        "folder": (tmp_path, "not a file"),
        "gbk": (gbk, "not UTF-8"),
    }
    for room, (script, why) in cases.items():
        done = cli("run", "tech-article", "--room", room, "--script", str(script), data=data)
        refused(done, str(script), "--script", why)
        assert not (data / "sessions" / f"room:{room}.jsonl").exists(), "the room must not run"
    assert "gbk.txt:1" in done.err  # the line of the first undecodable byte


def test_script_lines_that_say_nothing_are_refused_with_file_and_line(
    cli: Cli, tmp_path: Path
) -> None:
    script = tmp_path / "s.txt"
    # 1: an author and no text; 2: blank (skipped); 3: fine; 4: full-width colon, no text;
    # 5: only an escaped line break; 6: only a zero-width space.
    script.write_text("author:\n   \nauthor: 继续\nauthor：  \n\\n\n\u200b\n", encoding="utf-8")
    data = tmp_path / "data"
    done = cli("run", "tech-article", "--room", "e1", "--script", str(script), data=data)
    error = refused(done, "s.txt:1", "says nothing", "nothing was posted")
    for line in (4, 5, 6):
        assert f"s.txt:{line}:" in error
    assert "s.txt:2" not in error and "s.txt:3" not in error
    assert not (data / "sessions" / "room:e1.jsonl").exists(), "no line of it is posted"


def test_a_script_saved_with_a_byte_order_mark_keeps_its_author(cli: Cli, tmp_path: Path) -> None:
    script = tmp_path / "bom.txt"
    script.write_bytes("author: 继续\n".encode("utf-8-sig"))
    data = tmp_path / "data"
    done = cli("run", "tech-article", "--room", "b1", "--script", str(script), data=data)
    assert done.code == 0, done.err
    log = (data / "sessions" / "room:b1.jsonl").read_text(encoding="utf-8").splitlines()
    said = [e for e in map(json.loads, log) if (e.get("meta") or {}).get("human")]
    assert [(e["author"], e["content"]) for e in said] == [("author", "继续")]
    assert said[0]["id"].startswith("script-1-")


def test_sop_refs_and_import_paths_are_checked(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    refused(
        cli("sop", "--data-dir", str(data), "show", "tech-article@x"),
        "'x'",
        "tech-article@1",
    )
    refused(cli("sop", "--data-dir", str(data), "show", "tech-article@99"), "no version 99")
    refused(
        cli("sop", "--data-dir", str(data), "approve", "tech-article", "--by", "ann"),
        "names no version",
    )
    missing = tmp_path / "nope"
    error = refused(cli("sop", "--data-dir", str(data), "import", str(missing)), "no such")
    assert str(missing) in error and "ImportReport(" not in error
    done = cli("sop", "--data-dir", str(data), "import", str(ROOT / "sop_library"))
    assert done.code == 0, done.err
    assert "ImportReport(" not in done.out
    assert "already stored: " in done.out and "tech-article@1" in done.out


def test_history_cuts_huge_events_of_every_kind_and_json_keeps_them(
    cli: Cli, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "sessions").mkdir(parents=True)
    huge = "字" * 20_000_000  # a 60 MB line
    big = "字" * 100_000  # and every other kind of event gets a long field
    key = "room:huge"
    events = [
        make_event(key, EventKind.MESSAGE, "author", huge, meta={"human": True}),
        make_event(key, EventKind.MESSAGE, "pm", "ok", meta={"note": big, "model": big}),
        make_event(key, EventKind.TOOL_RESULT, "pm", {"name": "w", "ok": True, "output": big}),
        make_event(key, EventKind.ERROR, "pm", {"error": "model_error", "detail": big}),
        make_event(key, EventKind.SOP_STEP, "system", {"n": 1, "do": big, "speakers": [big]}),
        make_event(key, EventKind.WAIT, "system", {"waiting_for": [big], "reason": big}),
        make_event(key, EventKind.PLAN, "system", {"outcome": {"sop": big, "failures": [big]}}),
        make_event(key, EventKind.FALLBACK, big, "\x1b[2J" + big),
        make_event(key, EventKind.SOP_STEP, "system", "a hand-edited line: text, not a dict"),
    ]
    log = data / "sessions" / f"{key}.jsonl"
    log.write_text("".join(e.to_json() + "\n" for e in events), encoding="utf-8")

    shown = cli("history", key, data=data)
    assert shown.code == 0, shown.err[-2000:]
    assert "Traceback" not in shown.err
    assert len(shown.out) < 100_000, "every text is cut"
    assert f"more characters: staffroom history --data-dir {data} room:huge --json" in shown.out
    assert "\x1b" not in shown.out and "\\x1b[2J" in shown.out  # no terminal control

    whole = cli("history", key, "--json", data=data)
    assert whole.code == 0, whole.err[-2000:]
    first = json.loads(whole.out.splitlines()[0])
    assert first["content"] == huge, "--json prints the whole event"


def test_a_bad_staffroom_model_names_the_variable_and_the_forms(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for value in ("nonsense:::", "openai:", "{provider: x", "no-such-name", "import:nosuch.X"):
        done = cli("run", "tech-article", env={"STAFFROOM_MODEL": value}, data=data)
        refused(done, "STAFFROOM_MODEL", "openai:NAME[@BASE_URL]", "unset STAFFROOM_MODEL")
    assert not data.exists(), "nothing is opened before the model is known to be good"
    done = cli("dm", "pm", "--model", "openai:", data=data)
    error = refused(done, "--model", "needs a name")
    assert "STAFFROOM_MODEL" not in error


def test_a_data_folder_that_is_a_file_is_named_as_one_by_every_command(
    tmp_path: Path, cli: Cli
) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a folder\n", encoding="utf-8")
    commands = [
        ["run", "tech-article"],
        ["dm", "pm"],
        ["history", "room:x"],
        ["replay", "room:x"],
        ["close", "room:x"],
        ["consolidate", "room:x"],
        ["memory", "pm", "--user", "alice"],
        ["doctor"],
        ["validate", "scenarios"],
        ["search", "部署"],
        ["forget", "部署"],
        ["extract", "room:x"],
        ["reflect"],
        ["trackers", "pm"],
        ["knowledge", "list"],
        ["serve", "--no-auth"],
    ]
    for folder in (file, file / "below"):  # the folder, or one it would be made in
        for args in [*commands, ["sop", "--data-dir", str(folder), "list"]]:
            given = [] if args[0] == "sop" else ["--data-dir", str(folder)]
            done = cli(*args, *given)
            assert done.code == 2, (args, done.out[-2000:], done.err[-2000:])
            assert "Traceback" not in done.err + done.out, args
            assert done.err.startswith("error: --data-dir: the data folder "), (args, done.err)
            assert f"{file} is a file, not a folder" in done.err, (args, done.err)
            assert "read-only" not in done.err and "no session" not in done.err
    from_env = cli("history", "room:x", env={"STAFFROOM_HOME": str(file)})
    assert from_env.code == 2 and "error: STAFFROOM_HOME: the data folder" in from_env.err
    assert file.read_text(encoding="utf-8") == "not a folder\n", "the file is left alone"
