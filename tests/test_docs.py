"""The README and the docs site say what runs: their marked examples run, their links land.

An example is runnable when the line before its fence is ``<!-- run -->`` (invisible on the
page). A ``python`` block runs as a program; a ``bash`` block holds ``staffroom`` commands,
one per line (``\\`` continues a line, ``echo TEXT | staffroom ...`` feeds it stdin, and a
``$EDITOR FILE`` line is the reader's own edit, skipped). Each example runs in a fresh copy
of this repository's sample project, on the offline simulator, with a data folder of its
own. ``<!-- run expect="TEXT" -->`` also asks that the example prints TEXT. ``make docs``
builds the site with ``mkdocs build --strict`` (broken links and references fail there); the
Python API page must list exactly the names ``framework/__init__.py`` exports.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_in_process import Cli

ROOT = Path(__file__).resolve().parents[1]
README_MAX_LINES = 250
SAMPLE_PROJECT = ("agents", "scenarios", "sop_library", "models.yaml")
MARKER = re.compile(r'^<!-- run(?: expect="(?P<expect>[^"]*)")? -->$')


@dataclass(frozen=True)
class Example:
    """One marked code block: where it is, its language, its text, what it must print."""

    where: str
    language: str
    code: str
    expect: str | None


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples() -> list[Example]:
    found: list[Example] = []
    for page in pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            marker = MARKER.match(line)
            if not marker:
                continue
            fence = lines[n + 1]
            assert fence.startswith("```"), f"{page.name}:{n + 1}: a run marker needs a fence"
            end = lines.index("```", n + 2)
            found.append(
                Example(
                    where=f"{page.relative_to(ROOT)}:{n + 2}",
                    language=fence.strip("`").split()[0],
                    code="\n".join(lines[n + 2 : end]),
                    expect=marker.group("expect"),
                )
            )
    return found


def commands(script: str) -> list[tuple[list[str], str]]:
    """``staffroom`` command lines -> (arguments, stdin); ``$EDITOR`` lines are left out."""
    found: list[tuple[list[str], str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words or words[0] == "$EDITOR":
            continue
        stdin = ""
        if words[0] == "echo" and "|" in words:
            bar = words.index("|")
            stdin, words = " ".join(words[1:bar]) + "\n", words[bar + 1 :]
        assert words[0] == "staffroom", f"not a staffroom command: {line}"
        found.append((words[1:], stdin))
    return found


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the sample project, the current folder, with no data folder yet."""
    for name in SAMPLE_PROJECT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name)
        else:
            shutil.copy(source, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_docs_have_runnable_examples() -> None:
    languages = {example.language for example in examples()}
    assert {"python", "bash"} <= languages


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.where)
def test_a_marked_example_runs(example: Example, project: Path, cli: Cli) -> None:
    if example.language == "python":
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(example.code, example.where, "exec"), {"__name__": "__main__"})
        output = printed.getvalue()
    else:
        assert example.language == "bash", f"{example.where}: run python or bash blocks"
        output = ""
        for args, stdin in commands(example.code):
            result = cli(*args, cwd=project, stdin=stdin)
            assert result.code == 0, f"staffroom {shlex.join(args)}\n{result.out}{result.err}"
            output += result.out
    assert output.strip(), f"{example.where} printed nothing"
    if example.expect:
        assert example.expect in output


def test_the_python_api_page_documents_every_public_name() -> None:
    import framework

    page = (ROOT / "docs" / "reference" / "python-api.md").read_text(encoding="utf-8")
    assert sorted(re.findall(r"^::: framework\.(\w+)$", page, re.M)) == sorted(framework.__all__)


def test_the_readme_is_short_and_its_links_land() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)", text)
    assert targets, "the README points into the docs"
    assert [t for t in targets if not (ROOT / t).is_file()] == []
