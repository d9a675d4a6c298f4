"""``staffroom sop ...`` and ``staffroom replay`` as a user runs them."""

from __future__ import annotations

from pathlib import Path

from cli_in_process import Cli


def test_sop_lifecycle_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "d")]
    script = tmp_path / "s.txt"
    # One script line, two lines of message: a correction and a score.
    script.write_text("纠正: order 3 before 2 先定配图再写正文\\n评分: 2/5\n", encoding="utf-8")
    run = cli("run", "tech-article", "--room", "c1", "--script", str(script), *data)
    assert run.code == 0, run.err
    assert "◆ outcome of tech-article@1: not a success, score 0.40" in run.out
    assert "◆ proposed tech-article@2 (draft)" in run.out

    listed = cli("sop", *data, "list")
    assert "tech-article" in listed.out and "draft" in listed.out
    shown = cli("sop", *data, "show", "tech-article@2")
    assert "先定配图再写正文" in shown.out and "room:c1" in shown.out
    diff = cli("sop", *data, "diff", "tech-article", "1", "2")
    assert "+" in diff.out and "designer" in diff.out

    refused = cli("sop", *data, "publish", "tech-article@2", "--require", "author")
    assert refused.code == 2 and "author" in refused.err
    assert "Traceback" not in refused.err
    assert cli("sop", *data, "approve", "tech-article@2", "--by", "author").code == 0
    published = cli("sop", *data, "publish", "tech-article@2", "--require", "author")
    assert published.code == 0 and "published" in published.out

    explained = cli("sop", *data, "explain", "tech-article")
    assert "tech-article@" in explained.out and "wins" in explained.out
    assert "0/1" in cli("sop", *data, "metrics", "tech-article").out  # corrected run
    report = cli("sop", *data, "report", "tech-article")
    assert "order" in report.out and "hit rate per user" in report.out

    out = tmp_path / "exported"
    exported = cli("sop", *data, "export", str(out))
    assert exported.code == 0
    assert (out / "tech-article" / "v2.md").exists() or any(out.rglob("v2.md"))

    deprecated = cli("sop", *data, "deprecate", "tech-article@2", "--why", "试用后回退")
    assert deprecated.code == 0 and "deprecated" in deprecated.out

    # The old session replays with the version it ran on, whatever is best now.
    replay = cli("replay", "room:c1", *data)
    assert replay.code == 0
    assert "ran on tech-article@1" in replay.out

    unknown = cli("sop", *data, "show", "tech-artcle")
    assert unknown.code == 2 and "tech-article" in unknown.err
