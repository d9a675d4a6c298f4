"""``staffroom sop ...`` and ``staffroom replay`` as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import ROOT


def staffroom(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "framework", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_sop_lifecycle_from_the_command_line(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "d")]
    script = tmp_path / "s.txt"
    # One script line, two lines of message: a correction and a score.
    script.write_text("纠正: order 3 before 2 先定配图再写正文\\n评分: 2/5\n", encoding="utf-8")
    run = staffroom("run", "tech-article", "--room", "c1", "--script", str(script), *data)
    assert run.returncode == 0, run.stderr
    assert "◆ outcome of tech-article@1: not a success, score 0.40" in run.stdout
    assert "◆ proposed tech-article@2 (draft)" in run.stdout

    listed = staffroom("sop", *data, "list")
    assert "tech-article" in listed.stdout and "draft" in listed.stdout
    shown = staffroom("sop", *data, "show", "tech-article@2")
    assert "先定配图再写正文" in shown.stdout and "room:c1" in shown.stdout
    diff = staffroom("sop", *data, "diff", "tech-article", "1", "2")
    assert "+" in diff.stdout and "designer" in diff.stdout

    refused = staffroom("sop", *data, "publish", "tech-article@2", "--require", "author")
    assert refused.returncode == 2 and "author" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert staffroom("sop", *data, "approve", "tech-article@2", "--by", "author").returncode == 0
    published = staffroom("sop", *data, "publish", "tech-article@2", "--require", "author")
    assert published.returncode == 0 and "published" in published.stdout

    explained = staffroom("sop", *data, "explain", "tech-article")
    assert "tech-article@" in explained.stdout and "wins" in explained.stdout
    assert "0/1" in staffroom("sop", *data, "metrics", "tech-article").stdout  # corrected run
    report = staffroom("sop", *data, "report", "tech-article")
    assert "order" in report.stdout and "hit rate per user" in report.stdout

    out = tmp_path / "exported"
    exported = staffroom("sop", *data, "export", str(out))
    assert exported.returncode == 0
    assert (out / "tech-article" / "v2.md").exists() or any(out.rglob("v2.md"))

    deprecated = staffroom("sop", *data, "deprecate", "tech-article@2", "--why", "试用后回退")
    assert deprecated.returncode == 0 and "deprecated" in deprecated.stdout

    # The old session replays with the version it ran on, whatever is best now.
    replay = staffroom("replay", "room:c1", *data)
    assert replay.returncode == 0
    assert "ran on tech-article@1" in replay.stdout

    unknown = staffroom("sop", *data, "show", "tech-artcle")
    assert unknown.returncode == 2 and "tech-article" in unknown.stderr
