"""Language as a user meets it on the command line: `make demo`'s English sample, projects made
by `init` in either language, the project's label language and `$STAFFROOM_LANGUAGE`."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from paths import ROOT

HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def staffroom(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("STAFFROOM_")}
    environ["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "framework", *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def demo_command() -> list[str]:
    """The command `make demo` runs, without the venv's path."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo:", 1)[1].splitlines()[1].strip()
    words = shlex.split(recipe)
    assert words[0] == "$(BIN)/staffroom", recipe
    return words[1:]


def test_make_demo_runs_the_english_sample_in_english(tmp_path: Path) -> None:
    command = demo_command()
    assert command[:2] == ["run", "escalation"]
    done = staffroom(*command, "--room", "demo", "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    flat = " ".join(done.stdout.replace("│", " ").split())  # the panel's lines unwrapped
    assert "ended: sop_complete (steps 4/4" in flat
    assert "3. oncall, lead (in parallel): Review" in flat and "waits for human input" in flat
    # Labels, SOP list, notices and the simulator's lines: nothing in the transcript is Chinese.
    assert not HAN.findall(done.stdout), done.stdout
    workspace = tmp_path / "workspaces" / "room:demo"
    assert {p.name for p in workspace.iterdir()} >= {"triage.md", "diagnosis.md", "reply.md"}


def test_the_chinese_sample_stays_runnable_with_chinese_sop_labels(tmp_path: Path) -> None:
    script = ROOT / "scenarios" / "tech_article.script.txt"
    args = ("run", "tech-article", "--room", "zh", "--script", str(script))
    done = staffroom(*args, "--data-dir", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "ended: sop_complete" in done.stdout  # the repository's labels: English
    assert "1. pm：立题与提纲" in done.stdout and "（工具：write_file；" in done.stdout


def test_sop_show_labels_each_sop_in_its_own_language(tmp_path: Path) -> None:
    data = ("--data-dir", str(tmp_path))
    english = staffroom("sop", *data, "show", "escalation")
    chinese = staffroom("sop", *data, "show", "tech-article")
    assert english.returncode == 0 and chinese.returncode == 0, english.stderr + chinese.stderr
    assert "(tools: read_file, write_file; waits for human input;" in english.stdout
    assert "工具" not in english.stdout
    assert "（工具：write_file；等待人工确认；" in chinese.stdout


def test_init_makes_an_english_project_and_zh_a_chinese_one(tmp_path: Path) -> None:
    english, chinese = tmp_path / "en-team", tmp_path / "zh-team"
    assert staffroom("init", str(english)).returncode == 0
    made = staffroom("init", str(chinese), "--language", "zh")
    assert made.returncode == 0, made.stderr
    assert "language: en" in (english / "staffroom.yaml").read_text(encoding="utf-8")
    for path in english.rglob("*"):
        if path.is_file():
            assert not HAN.findall(path.read_text(encoding="utf-8")), path
    assert "language: zh" in (chinese / "scenarios" / "note.yaml").read_text(encoding="utf-8")

    def run(project: Path, env: dict[str, str] | None = None) -> str:
        script = project / "scenarios" / "note.script.txt"
        args = ("--project", str(project), "--data-dir", str(tmp_path / "d" / project.name))
        done = staffroom("run", "note", *args, "--script", str(script), env=env)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = run(english)
    assert "── step 1: Draft the note" in out and "■ ended: sop_complete" in out
    assert not HAN.findall(out), out
    out = run(chinese)
    assert "── 第 1 步：起草短文" in out and "■ 结束：sop_complete" in out
    assert "author （真人）: 可以，继续。" in out
    # The person's setting wins over the project's.
    out = run(chinese, {"STAFFROOM_LANGUAGE": "en-GB"})
    assert "── step 1: 起草短文" in out and "■ ended: sop_complete" in out


def test_init_refuses_a_language_it_has_no_text_for(tmp_path: Path) -> None:
    done = staffroom("init", str(tmp_path / "p"), "--language", "fr")
    assert done.returncode == 2
    assert "unknown language 'fr'" in done.stderr and "--language" in done.stderr
    assert not (tmp_path / "p").exists()


def test_a_bad_label_language_is_one_error_naming_where_it_is(tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert staffroom("init", str(project)).returncode == 0
    env = {"STAFFROOM_LANGUAGE": "klingon"}
    done = staffroom("history", "room:x", "--data-dir", str(tmp_path / "d"), env=env)
    assert done.returncode == 2 and "STAFFROOM_LANGUAGE" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

    (project / "staffroom.yaml").write_text("language: fr\n", encoding="utf-8")
    checked = staffroom("validate", str(project), "--project", str(project))
    assert checked.returncode == 1
    assert "staffroom.yaml:1" in checked.stdout and "unknown language 'fr'" in checked.stdout
    ran = staffroom("run", "note", "--project", str(project), "--data-dir", str(tmp_path / "d"))
    assert ran.returncode == 2 and "staffroom.yaml:1" in ran.stderr, ran.stderr
