"""HISTORY.md: dated lines appended under a lock, read leniently, newest part within a budget."""

from __future__ import annotations

import multiprocessing
from datetime import date, datetime
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from framework.memory.history_summary import HEADER, HistorySummary

D1, D2, D3 = date(2026, 5, 28), date(2026, 5, 29), date(2026, 5, 30)


def test_append_creates_folders_header_and_dated_lines(tmp_path: Path) -> None:
    path = tmp_path / "history" / "dm:alice" / "HISTORY.md"
    history = HistorySummary(path)
    assert history.lines() == [] and history.recent(100) == ""
    history.append(
        [(D1, "  用户咨询了部署方案，\n决定先灰度 10%。  "), (D2, "   "), (D3, "回顾了监控")]
    )
    assert path.read_text(encoding="utf-8") == (
        f"{HEADER}\n2026-05-28 用户咨询了部署方案， 决定先灰度 10%。\n2026-05-30 回顾了监控\n"
    )
    history.append([(datetime(2026, 5, 31, 9, 30), "上线完成")])
    history.append([])
    assert history.lines() == [
        "2026-05-28 用户咨询了部署方案， 决定先灰度 10%。",
        "2026-05-30 回顾了监控",
        "2026-05-31 上线完成",
    ]
    assert path.read_text(encoding="utf-8").count(HEADER) == 1


def test_recent_is_newest_first_within_budget(tmp_path: Path) -> None:
    history = HistorySummary(tmp_path / "HISTORY.md")
    history.append([(D1, "a" * 20), (D2, "b" * 20), (D3, "c" * 20)])  # 31 characters each
    newest, middle = "2026-05-30 " + "c" * 20, "2026-05-29 " + "b" * 20
    assert history.recent(1000) == "\n".join([newest, middle, "2026-05-28 " + "a" * 20])
    assert history.recent(63) == f"{newest}\n{middle}"  # 31 + 1 + 31
    assert history.recent(62) == newest  # the next one does not fit: stop, do not cut it
    assert history.recent(31) == newest
    assert history.recent(10) == "2026-05-3…"  # only the newest line is ever cut
    assert len(history.recent(10)) == 10
    assert history.recent(0) == ""


def test_recent_stops_at_a_long_older_line(tmp_path: Path) -> None:
    history = HistorySummary(tmp_path / "HISTORY.md")
    history.append([(D1, "short"), (D2, "long " * 40), (D3, "newest")])
    assert history.recent(100) == "2026-05-30 newest"  # no skipping over to older lines


def test_hand_edited_file_is_read_leniently(tmp_path: Path) -> None:
    path = tmp_path / "HISTORY.md"
    path.write_text(
        f"{HEADER}\n\n2026-05-01 早期记录\n   \n随手加的一行，没有日期\n\t2026-05-02 缩进的行  \n"
        "2026-05-03 no final newline",
        encoding="utf-8",
    )
    history = HistorySummary(path)
    assert history.lines() == [
        "2026-05-01 早期记录",
        "随手加的一行，没有日期",
        "2026-05-02 缩进的行",
        "2026-05-03 no final newline",
    ]
    history.append([(D3, "appended")])
    assert history.lines()[-2:] == ["2026-05-03 no final newline", "2026-05-30 appended"]
    assert history.recent(47) == "2026-05-30 appended\n2026-05-03 no final newline"
    assert history.recent(46) == "2026-05-30 appended"


def write_entries(path: Path, name: str, count: int, go: EventType) -> None:
    """One writer process: waits for ``go`` so that all writers overlap, then appends."""
    history = HistorySummary(path)
    go.wait(timeout=60)
    for seq in range(count):
        history.append([(D3, f"{name} 第{seq}条 a"), (D3, f"{name} {seq} b")])


def test_concurrent_appends_from_four_processes_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "history" / "room:r1" / "HISTORY.md"
    names, count = [f"w{i}" for i in range(4)], 40
    # fork: the children start at once instead of each importing the framework again.
    ctx = multiprocessing.get_context("fork")
    go = ctx.Event()
    procs = [ctx.Process(target=write_entries, args=(path, name, count, go)) for name in names]
    for proc in procs:
        proc.start()
    go.set()
    try:
        for proc in procs:
            proc.join(timeout=120)
            assert proc.exitcode == 0
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()

    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"{HEADER}\n") and text.count(HEADER) == 1
    lines = HistorySummary(path).lines()
    assert len(lines) == len(names) * count * 2
    for name in names:
        mine = [line for line in lines if line.split()[1] == name]
        expected = []
        for seq in range(count):  # each append's two lines stay together and in order
            expected += [f"2026-05-30 {name} 第{seq}条 a", f"2026-05-30 {name} {seq} b"]
        assert mine == expected
        pairs = [i for i, line in enumerate(lines) if line.startswith(f"2026-05-30 {name} 第")]
        assert all(lines[i + 1].startswith(f"2026-05-30 {name} ") for i in pairs)
    assert not [p.name for p in path.parent.iterdir() if p.name.startswith(".history-tmp-")]
