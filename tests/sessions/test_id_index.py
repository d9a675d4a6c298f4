"""The id index: the hot append path's duplicate check on lines other writers added."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.sessions import EventKind, JsonlLog, make_event
from framework.sessions.id_index import block_keys, id_key, plain_keys


@pytest.fixture(autouse=True)
def _hot_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep appends on the inlined hot path (no periodic fstat recheck) on a slow machine."""
    monkeypatch.setattr("framework.sessions.jsonl_log._RECHECK", 3600.0)


@pytest.mark.parametrize(
    ("foreign", "event_id"),
    [
        ('{"id":"dup-1","ts":"t","session":"s","kind":"message","author":"b"}', "dup-1"),
        ('{ "id": "dup-2", "content": "hand-written" }', "dup-2"),
        ('{"id":"d\\u0075p-3","content":"escaped plain id"}', "dup-3"),
        ('{"content":"another key order","id":"dup-4"}', "dup-4"),
        ('{"id":"q\\"5","content":"an id with a quote"}', 'q"5'),
    ],
)
def test_hot_path_skips_an_id_another_writer_just_added(
    tmp_path: Path, foreign: str, event_id: str
) -> None:
    path = tmp_path / "log.jsonl"
    log = JsonlLog(path)
    assert log.append(make_event("s", EventKind.MESSAGE, "a", "first"))  # opens, indexes
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, (foreign + "\n").encode())
    os.close(fd)
    assert not log.append(make_event("s", EventKind.MESSAGE, "a", "again", id=event_id))
    assert log.append(make_event("s", EventKind.MESSAGE, "a", "new", id=event_id + "x"))
    assert not log.append(make_event("s", EventKind.MESSAGE, "a", "again", id=event_id))
    assert log.has(event_id)
    log.close()


def test_hot_path_does_not_match_an_id_prefix_or_content(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    log = JsonlLog(path)
    assert log.append(make_event("s", EventKind.MESSAGE, "a", "first"))
    other = make_event("s", EventKind.MESSAGE, "b", 'mentions {"id":"abc"} inline', id="abcd")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, (other.to_json() + "\n").encode())
    os.close(fd)
    assert log.append(make_event("s", EventKind.MESSAGE, "a", "prefix", id="abc"))
    assert [e.id for e in log.read_all()][1:] == ["abcd", "abc"]
    log.close()


def test_plain_keys_and_block_keys() -> None:
    escaped = b'\n{"id":"a","x":1}\n{"id":"b\\u00e9","x":"\\n"}\n'
    assert plain_keys(escaped) is None  # an escaped id: parsed by block_keys instead
    assert block_keys(escaped, len(escaped)) == [b"a", id_key("b\u00e9")]
    assert plain_keys(b'\n{"id":"a","x":"\\n"}\n{"id":"b"}\n') == [b"a", b"b"]
    assert plain_keys(b'\n{"id":"a"}\n{"id":"b"') is None  # torn tail
    assert plain_keys(b'{"id":"a"}\n') is None  # no newline before the first line
    assert plain_keys(b'\n{"id":"a"}\n\n') is None  # a blank line
    assert id_key('q"5') == b'q\\"5' and id_key("plain-1") == b"plain-1"
