"""Tool output governance: budget, spill to the workspace, read-back, quote protection."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from framework.sessions.workspace import Workspace
from framework.tools.output import (
    DEFAULT_BUDGET,
    KEPT_LABEL,
    GovernedOutput,
    govern,
    quoted_snippets,
)


def numbered(count: int, width: int = 40) -> str:
    return "".join(f"row {i:05d} " + "x" * (width - 11) + "\n" for i in range(count))


def run(
    ws: Workspace, output: str, budget: int = DEFAULT_BUDGET, protect: Sequence[str] = ()
) -> GovernedOutput:
    """Govern as tool "search", call "c1", and check the invariants every result keeps."""
    result = govern(
        output, budget=budget, workspace=ws, tool="search", call_id="c1", protect=protect
    )
    assert len(result.shown) <= budget
    assert result.size == len(output)
    return result


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def test_within_budget_passes_through_and_writes_nothing(ws: Workspace) -> None:
    result = run(ws, "short output\n")
    assert result == GovernedOutput("short output\n", None, 13, False)
    assert ws.list_files() == []


def test_long_output_is_spilled_whole_and_digested(ws: Workspace) -> None:
    output = numbered(1000)  # 40,000 characters
    result = run(ws, output)
    assert result.trimmed and result.spilled_path == "tool-outputs/c1-search.txt"
    assert ws.list_files() == [result.spilled_path]
    assert ws.resolve(result.spilled_path).read_text(encoding="utf-8") == output
    shown = result.shown
    assert shown.startswith("row 00000 ") and shown.endswith("row 00999 " + "x" * 29 + "\n")
    assert result.spilled_path in shown and str(len(output)) in shown
    assert "read_file(path=" in shown and len(shown) > DEFAULT_BUDGET - 200  # budget is used
    # Cut at line boundaries: every shown row is whole.
    rows = [line for line in shown.splitlines() if line.startswith("row ")]
    assert rows and all(len(line) == 39 for line in rows)


def test_marker_offset_reads_back_the_gap_and_pages_rebuild_the_output(ws: Workspace) -> None:
    output = numbered(300)
    result = run(ws, output, budget=1000)
    assert result.spilled_path is not None
    match = re.search(r"\[… (\d+) of (\d+) .*offset=(\d+), limit=(\d+)", result.shown)
    assert match is not None
    gap, size, offset, limit = map(int, match.groups())
    assert size == len(output)
    head = result.shown[: result.shown.index("[…")]
    assert offset == len(head) and output.startswith(head)
    assert ws.read_text(result.spilled_path, offset=offset, limit=gap) == output[offset:][:gap]
    pages, pos = [], 0
    while page := ws.read_text(result.spilled_path, offset=pos, limit=limit):
        pages.append(page)
        pos += len(page)
    assert "".join(pages) == output


def test_protected_quote_in_the_middle_survives(ws: Workspace) -> None:
    lines = [f"event {i:04d} ok" for i in range(2000)]
    lines[1000] = "event 1000 FAILED: disk quota exceeded on /srv/data (errno 122)"
    output = "\n".join(lines) + "\n"
    quote = "FAILED: disk quota exceeded on /srv/data"
    plain = run(ws, output)
    assert quote not in plain.shown
    kept = run(ws, output, protect=[quote, "tiny", "not in the output at all"])
    assert quote in kept.shown
    label = kept.shown.index(KEPT_LABEL)
    assert label < kept.shown.index(quote) < label + 200  # marked, with a little context
    assert "event 0999 ok" in kept.shown and "event 1001 ok" in kept.shown  # context
    assert kept.shown.startswith("event 0000 ok") and "event 1999 ok" in kept.shown
    assert kept == run(ws, output, protect=[quote, "tiny", "not in the output at all"])


def test_quotes_over_budget_keep_whole_snippets_in_order(ws: Workspace) -> None:
    output = "".join(f"{i:04d} " + "abcdefghij" * 8 + "\n" for i in range(400))
    quotes = [f"{i:04d} " + "abcdefghij" * 8 for i in (100, 200, 300, 350)]
    result = run(ws, output, budget=320, protect=quotes)
    kept = [q for q in quotes if q in result.shown]
    assert kept == quotes[: len(kept)] and 1 <= len(kept) < len(quotes)


def test_quoted_snippets_finds_quoted_text_and_whole_lines() -> None:
    previous = "build ok\nERROR: module foo.bar not found (line 42)\nwarning: slow test\n"
    text = (
        "日志里写着「module foo.bar not found」，还有\n"
        'warning: slow test\n以及 "ok" 和 `nothing here at all`'
    )
    assert quoted_snippets(text, previous) == ["module foo.bar not found", "warning: slow test"]
    # A whole quoted line wins over its own pieces.
    text = "ERROR: module foo.bar not found (line 42)\nso 'module foo.bar not found' means"
    assert quoted_snippets(text, previous) == ["ERROR: module foo.bar not found (line 42)"]
    assert quoted_snippets("“ok”", previous) == []  # too short
    assert quoted_snippets("- warning: slow test.", previous) == ["warning: slow test"]


def test_quoted_snippets_feed_protection(ws: Workspace) -> None:
    output = numbered(500) + "tail\n"
    output = output.replace("row 00250 ", "row 00250 ERR-7731 in payment gateway ")
    protect = quoted_snippets("Why did 'ERR-7731 in payment gateway' happen?", output)
    assert protect == ["ERR-7731 in payment gateway"]
    assert "ERR-7731 in payment gateway" in run(ws, output, protect=protect).shown


@pytest.mark.parametrize("extra", [0, 1])
def test_exactly_budget_passes_and_one_more_spills(ws: Workspace, extra: int) -> None:
    output = "y" * (DEFAULT_BUDGET - 1) + "\n" + "z" * extra
    result = run(ws, output)
    assert result.trimmed is bool(extra)
    assert (result.shown == output) is (extra == 0)
    assert ws.list_files() == (["tool-outputs/c1-search.txt"] if extra else [])


@pytest.mark.parametrize("budget", [1, 20, 60, 120, 200, 201, 333])
def test_tiny_budgets_stay_within_budget(ws: Workspace, budget: int) -> None:
    output = numbered(100)
    result = run(ws, output, budget=budget)
    assert result.trimmed and ws.read_text("tool-outputs/c1-search.txt") == output
    if budget >= 200:
        assert "tool-outputs/c1-search.txt" in result.shown and "row 00000" in result.shown
        quote = "row 00050 xxxxx"
        assert quote in run(ws, output, budget=budget, protect=[quote]).shown


def test_single_line_output_without_newlines(ws: Workspace) -> None:
    output = "a" * 3000 + "MIDDLE-MARKER-TEXT" + "b" * 3000
    result = run(ws, output, budget=500, protect=["MIDDLE-MARKER-TEXT"])
    assert result.shown.startswith("aaa") and result.shown.endswith("bbb")
    assert "MIDDLE-MARKER-TEXT" in result.shown


def test_cjk_text(ws: Workspace) -> None:
    output = "".join(f"第{i}行：用户咨询了部署方案，决定先灰度百分之十。\n" for i in range(400))
    quote = "第200行：用户咨询了部署方案"
    result = run(ws, output, budget=600, protect=[quote])
    assert quote in result.shown and result.shown.startswith("第0行")
    assert "第399行" in result.shown
    assert result.spilled_path is not None
    assert ws.read_text(result.spilled_path) == output


def test_unsafe_names_and_crlf_offsets(ws: Workspace) -> None:
    output = "".join(f"line {i}\r\n" for i in range(2000))
    result = govern(output, budget=300, workspace=ws, tool="web/fetch", call_id="call:1 ../x")
    assert result.spilled_path == "tool-outputs/call_1_.._x-web_fetch.txt"
    assert ws.resolve(result.spilled_path).read_bytes() == output.encode()
    match = re.search(r"offset=(\d+)", result.shown)
    assert match is not None
    head = result.shown[: result.shown.index("[…")]
    # read_file sees "\r\n" as one character; the offset points right after the head.
    expect = head.replace("\r\n", "\n")
    assert ws.read_text(result.spilled_path, limit=int(match.group(1))) == expect


def test_deterministic_and_rejects_zero_budget(ws: Workspace) -> None:
    output = numbered(400)
    assert run(ws, output, budget=700) == run(ws, output, budget=700)
    with pytest.raises(ValueError):
        govern(output, budget=0, workspace=ws, tool="t", call_id="c")
