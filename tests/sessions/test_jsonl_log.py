"""JsonlLog in one process: round trips, replays, torn tails, malformed lines, tail()."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from framework.errors import JsonlError
from framework.sessions import Durability, Event, EventKind, JsonlLog, LockKind, make_event

SESSION = "room:launch-42"


def msg(text: str, *, author: str = "alice", id: str | None = None) -> Event:
    return make_event(SESSION, EventKind.MESSAGE, author, text, id=id)


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_append_read_tail_roundtrip_with_chinese_text(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "sessions" / f"{SESSION}.jsonl")
    events = [
        msg("你好，团队：发布计划见附件。"),
        make_event(SESSION, EventKind.TOOL_CALL, "writer", {"name": "write", "args": {"p": "稿"}}),
        msg("第三条 — with “quotes”, a \\ backslash and a\nnewline"),
    ]
    assert [log.append(e) for e in events] == [True, True, True]

    assert log.read_all() == events
    assert list(log.iter_events()) == events
    assert log.tail(2) == events[1:]
    assert log.tail(10) == events
    assert log.tail(0) == []
    raw = log.path.read_bytes().decode("utf-8")
    assert "你好，团队" in raw  # stored as UTF-8, not \u escapes
    assert all(line.startswith('{"id":"') for line in raw.splitlines())
    assert log.problems == []


def test_reading_a_missing_log_gives_nothing(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "none.jsonl")
    assert log.read_all() == [] and log.tail(5) == [] and not log.has("x")
    assert not log.path.exists()  # reading never creates the file


def test_replayed_id_is_skipped(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "s.jsonl")
    first = msg("hello")
    assert log.append(first) is True
    assert log.append(first) is False
    assert log.append(msg("same id, other text", id=first.id)) is False
    assert log.append_many([first, msg("new"), msg("new twice", id="dup"), msg("x", id="dup")]) == [
        False,
        True,
        True,
        False,
    ]
    assert len(lines_of(log.path)) == 3
    assert log.has(first.id) and log.has("dup") and not log.has("nope")


def test_replay_is_skipped_across_two_instances_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    mine, theirs = JsonlLog(path), JsonlLog(path)  # two descriptors: another process's view
    a, b = msg("from mine"), msg("from theirs", author="bob")
    assert mine.append(a)
    assert theirs.append(b)
    assert not theirs.append(a)  # theirs indexes what mine wrote
    assert not mine.append(b)  # and the other way round
    assert theirs.has(a.id) and mine.has(b.id)
    assert [e.id for e in JsonlLog(path).read_all()] == [a.id, b.id]


@pytest.mark.parametrize("odd_id", ['quote"inside', "back\\slash", "控制\tchar", "turn-3.msg@x"])
def test_ids_needing_escapes_are_deduplicated(tmp_path: Path, odd_id: str) -> None:
    path = tmp_path / "s.jsonl"
    mine, theirs = JsonlLog(path), JsonlLog(path)
    assert mine.append(msg("one", id=odd_id))
    assert not theirs.append(msg("two", id=odd_id))
    assert theirs.has(odd_id)
    assert [e.id for e in mine.read_all(strict=True)] == [odd_id]


def test_hand_written_line_counts_for_deduplication(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = JsonlLog(path)
    log.append(msg("first"))
    hand = {"ts": "2026-11-30T09:00:00.000Z", "id": "by-hand", "session": SESSION}
    hand |= {"kind": "message", "author": "editor", "content": "typed in vim"}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(hand, ensure_ascii=False, indent=None) + "\n")
    assert not log.append(msg("again", id="by-hand"))
    assert [e.id for e in log.read_all(strict=True)][-1] == "by-hand"


def test_malformed_middle_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = JsonlLog(path)
    good = [msg(f"m{i}") for i in range(4)]
    log.append_many(good[:2])
    with path.open("ab") as fh:
        fh.write(b'{"id":"broken", "ts": oops}\n')  # line 3: bad JSON
        fh.write(b'{"id":"no-kind","ts":"t","session":"room:x","author":"a","content":1}\n')
    log.append_many(good[2:])

    assert log.read_all() == good
    assert [p.line for p in log.problems] == [3, 4]
    assert all(isinstance(p, JsonlError) and p.file == str(path) for p in log.problems)
    assert log.problems[1].field == "kind"
    assert "fix or delete it by hand" in str(log.problems[0])
    with pytest.raises(JsonlError) as caught:
        log.read_all(strict=True)
    assert caught.value.line == 3 and caught.value.fix
    assert b"oops" in path.read_bytes()  # never rewritten or dropped
    assert log.tail(3) == good[1:]  # tail skips it too
    assert len(log.problems) == 2 and log.problems[0].line is None  # reported by byte offset


def test_torn_tail_is_skipped_then_quarantined_by_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = JsonlLog(path)
    complete = [msg(f"complete {i}") for i in range(3)]
    log.append_many(complete)
    torn = (msg("cut short").to_json()[:40]).encode()
    with path.open("ab") as fh:
        fh.write(torn)  # a writer killed mid-write: no newline

    reader = JsonlLog(path)
    assert reader.read_all(strict=True) == complete
    assert reader.torn_tail_bytes == len(torn)
    assert reader.tail(2) == complete[1:]
    assert reader.problems == []

    after = msg("after the crash")
    assert JsonlLog(path).append(after)  # a fresh writer: notices the torn tail, moves it
    assert path.read_bytes().endswith(b"\n")
    assert JsonlLog(path).read_all(strict=True) == [*complete, after]
    quarantine = Path(f"{path}.torn").read_bytes()
    assert quarantine.startswith(b"# ") and torn in quarantine
    # The writer that had the file open before the crash notices it as well.
    assert log.append(msg("from the old writer"))
    assert len(JsonlLog(path).read_all(strict=True)) == 5


def test_tail_on_a_large_file(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    log = JsonlLog(path)
    events = [msg(f"事件 {i} " + "x" * (i % 300)) for i in range(20_000)]
    for start in range(0, len(events), 1000):
        log.append_many(events[start : start + 1000])
    assert path.stat().st_size > 3_000_000
    assert log.tail(1) == events[-1:]
    assert log.tail(7) == events[-7:]
    assert log.tail(2500) == events[-2500:]  # needs several widenings of the window
    assert log.tail(25_000) == events


@pytest.mark.parametrize("durability", ["turn", "event", "none"])
@pytest.mark.parametrize("lock", ["flock", "filelock"])
def test_durability_modes_and_locks(tmp_path: Path, durability: Durability, lock: LockKind) -> None:
    path = tmp_path / "s.jsonl"
    log = JsonlLog(path, durability=durability, lock=lock)
    event = msg("durable?")
    assert log.append(event) and not log.append(event)
    assert log.append_many([event, msg("more")]) == [False, True]
    log.sync()
    log.close()
    assert JsonlLog(path, lock=lock).read_all(strict=True)[0] == event
    if lock == "flock":
        assert not Path(f"{path}.lock").exists()  # flock needs no side file


def test_a_replaced_file_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    log = JsonlLog(path)
    log.append(msg("before"))
    kept = path.read_bytes()
    replacement = tmp_path / "edited.jsonl"
    replacement.write_bytes(kept)
    replacement.replace(path)  # what an editor's save-by-rename does
    time.sleep(0.06)  # the link count is checked at most every 50 ms during a burst
    log.append(msg("after"))
    assert [e.content for e in JsonlLog(path).read_all()] == ["before", "after"]


def test_tail_until_reads_back_to_the_newest_match(tmp_path: Path) -> None:
    log = JsonlLog(tmp_path / "s.jsonl")
    log.append_many([msg(f"m{i}", id=f"e{i}") for i in range(3000)])
    since = log.tail_until(lambda e: e.id in ("e10", "e2500"))
    assert [e.id for e in since] == [f"e{i}" for i in range(2500, 3000)]
    far = log.tail_until(lambda e: e.id == "e10")  # beyond the first chunks read
    assert far[0].id == "e10" and len(far) == 2990
    assert len(log.tail_until(lambda e: False)) == 3000  # no match: everything
