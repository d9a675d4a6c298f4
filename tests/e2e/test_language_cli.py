"""Language as a user meets it on the command line: `make demo`'s English sample, projects made
by `init` in either language, the project's label language and `$STAFFROOM_LANGUAGE`."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from cli_in_process import Cli
from paths import ROOT

HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def demo_command() -> list[str]:
    """The command `make demo` runs, without the venv's path."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo:", 1)[1].splitlines()[1].strip()
    words = shlex.split(recipe)
    assert words[0] == "$(BIN)/staffroom", recipe
    return words[1:]


def test_make_demo_runs_the_english_sample_in_english(cli: Cli, tmp_path: Path) -> None:
    command = demo_command()
    assert command[:2] == ["run", "escalation"]
    done = cli(*command, "--room", "demo", "--data-dir", str(tmp_path))
    assert done.code == 0, done.err
    flat = " ".join(done.out.replace("│", " ").split())  # the panel's lines unwrapped
    assert "ended: sop_complete (steps 4/4" in flat
    assert "3. oncall, lead (in parallel): Review" in flat and "waits for human input" in flat
    # Labels, SOP list, notices and the simulator's lines: nothing in the transcript is Chinese.
    assert not HAN.findall(done.out), done.out
    workspace = tmp_path / "workspaces" / "room:demo"
    assert {p.name for p in workspace.iterdir()} >= {"triage.md", "diagnosis.md", "reply.md"}


def test_the_chinese_sample_stays_runnable_with_chinese_sop_labels(
    cli: Cli, tmp_path: Path
) -> None:
    script = ROOT / "scenarios" / "tech_article.script.txt"
    args = ("run", "tech-article", "--room", "zh", "--script", str(script))
    done = cli(*args, "--data-dir", str(tmp_path))
    assert done.code == 0, done.err
    assert "ended: sop_complete" in done.out  # the repository's labels: English
    assert "1. pm：立题与提纲" in done.out and "（工具：write_file；" in done.out


def test_sop_show_labels_each_sop_in_its_own_language(cli: Cli, tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path))
    english = cli("sop", *data, "show", "escalation")
    chinese = cli("sop", *data, "show", "tech-article")
    assert english.code == 0 and chinese.code == 0, english.err + chinese.err
    assert "(tools: read_file, write_file; waits for human input;" in english.out
    assert "工具" not in english.out
    assert "（工具：write_file；等待人工确认；" in chinese.out


def test_init_makes_an_english_project_and_zh_a_chinese_one(cli: Cli, tmp_path: Path) -> None:
    english, chinese = tmp_path / "en-team", tmp_path / "zh-team"
    assert cli("init", str(english)).code == 0
    made = cli("init", str(chinese), "--language", "zh")
    assert made.code == 0, made.err
    assert "language: en" in (english / "staffroom.yaml").read_text(encoding="utf-8")
    for path in english.rglob("*"):
        if path.is_file():
            assert not HAN.findall(path.read_text(encoding="utf-8")), path
    assert "language: zh" in (chinese / "scenarios" / "note.yaml").read_text(encoding="utf-8")

    def run(project: Path, env: dict[str, str] | None = None) -> str:
        script = project / "scenarios" / "note.script.txt"
        # A folder per run: run ids are per second, and in-process runs share a second.
        data = tmp_path / "d" / f"{project.name}-{'env' if env else 'own'}"
        args = ("--project", str(project), "--data-dir", str(data))
        done = cli("run", "note", *args, "--script", str(script), env=env)
        assert done.code == 0, done.err
        return done.out

    out = run(english)
    assert "── step 1: Draft the note" in out and "■ ended: sop_complete" in out
    assert not HAN.findall(out), out
    out = run(chinese)
    assert "── 第 1 步：起草短文" in out and "■ 结束：sop_complete" in out
    assert "author （真人）: 可以，继续。" in out
    # The person's setting wins over the project's.
    out = run(chinese, {"STAFFROOM_LANGUAGE": "en-GB"})
    assert "── step 1: 起草短文" in out and "■ ended: sop_complete" in out


def test_init_refuses_a_language_it_has_no_text_for(cli: Cli, tmp_path: Path) -> None:
    done = cli("init", str(tmp_path / "p"), "--language", "fr")
    assert done.code == 2
    assert "unknown language 'fr'" in done.err and "--language" in done.err
    assert not (tmp_path / "p").exists()


def test_a_bad_label_language_is_one_error_naming_where_it_is(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert cli("init", str(project)).code == 0
    env = {"STAFFROOM_LANGUAGE": "klingon"}
    done = cli("history", "room:x", "--data-dir", str(tmp_path / "d"), env=env)
    assert done.code == 2 and "STAFFROOM_LANGUAGE" in done.err, done.err
    assert "Traceback" not in done.err

    (project / "staffroom.yaml").write_text("language: fr\n", encoding="utf-8")
    checked = cli("validate", str(project), "--project", str(project))
    assert checked.code == 1
    assert "staffroom.yaml:1" in checked.out and "unknown language 'fr'" in checked.out
    ran = cli("run", "note", "--project", str(project), "--data-dir", str(tmp_path / "d"))
    assert ran.code == 2 and "staffroom.yaml:1" in ran.err, ran.err
