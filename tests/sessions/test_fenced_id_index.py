"""The id index of a log written under room leases: epochs read from a line's head, stale ids
left out, and the append hot path's catch-up refusing a superseded writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import LeaseLostError
from framework.sessions import EventKind, JsonlLog, make_event
from framework.sessions.id_index import fenced_keys, id_key, line_head


class Lease:
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def check(self) -> None:
        pass


@pytest.fixture(autouse=True)
def _hot_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep appends on the inlined hot path (no periodic fstat recheck) on a slow machine."""
    monkeypatch.setattr("framework.sessions.jsonl_log._RECHECK", 3600.0)


@pytest.mark.parametrize(
    ("line", "head"),
    [
        (b'{"id":"a","ts":"t"}', (b"a", 0)),
        (b'{"id":"a","epoch":7,"ts":"t"}', (b"a", 7)),
        (b'{"epoch":3,"mark":"lease","ts":"t"}', (None, 3)),
        (b'{"id":"a","ts":"t","meta":{"entry":true,"epoch":"e1"}}', (b"a", 0)),  # meta's own
        (b'{"ts": "t", "epoch": 4, "id": "a"}', (b"a", 4)),  # hand-written: parsed
        (b'{"id":"a","epoch":4.5}', (None, 0)),  # not a whole number: no event, no bar
        (b'{"id":"a","epoch":"4"}', (None, 0)),
        (b'{"epoch":9}', (None, 0)),  # no id and no marker: malformed, raises nothing
        (b"not json", (None, 0)),
        (b'{"id":"q\\"5","epoch":2}', (id_key('q"5'), 2)),
    ],
)
def test_a_line_head_gives_its_id_and_epoch(line: bytes, head: tuple[bytes | None, int]) -> None:
    assert line_head(line) == head


def test_fenced_keys_leave_out_stale_ids_and_record_where_the_epoch_rose() -> None:
    lines = [
        b'{"id":"a","ts":"t"}',
        b'{"epoch":2,"mark":"lease","ts":"t"}',
        b'{"id":"b","epoch":1,"ts":"t"}',  # stale
        b'{"id":"c","epoch":2,"ts":"t"}',
        b'{"id":"d","ts":"t"}',  # unfenced after a takeover: stale too
    ]
    block = b"\n" + b"\n".join(lines) + b"\n"
    rises: list[tuple[int, int]] = []
    keys, top = fenced_keys(block, len(block), 99, 0, rises)
    assert (keys, top) == ([b"a", b"c"], 2)
    assert rises == [(100 + len(lines[0]) + 1, 2)]
    unfenced = b'\n{"id":"x"}\n{"id":"y"}\n'
    assert fenced_keys(unfenced, len(unfenced), -1, 0, rises) == ([b"x", b"y"], 0)
    assert fenced_keys(unfenced, len(unfenced), -1, 2, rises) == ([], 2)  # below the bar


def test_the_hot_path_refuses_a_writer_once_another_took_over(tmp_path: Path) -> None:
    path = tmp_path / "room:x.jsonl"
    a, b = JsonlLog(path), JsonlLog(path)
    a.fence, b.fence = Lease(1), Lease(2)
    assert a.append(make_event("room:x", EventKind.MESSAGE, "a", "1", id="s1"))
    assert a.append(make_event("room:x", EventKind.MESSAGE, "a", "2", id="s2"))  # hot path
    b.mark_epoch()
    with pytest.raises(LeaseLostError):
        a.append(make_event("room:x", EventKind.MESSAGE, "a", "3", id="s3"))
    assert b.append(make_event("room:x", EventKind.MESSAGE, "b", "3", id="s3"))
    assert not b.append(make_event("room:x", EventKind.MESSAGE, "b", "3", id="s3"))
    assert [(e.id, e.epoch) for e in JsonlLog(path).read_all()] == [
        ("s1", 1),
        ("s2", 1),
        ("s3", 2),
    ]
