"""A session log fenced by room leases: a replica that lost its lease cannot change history.

"Two replicas" are two JsonlLog objects on one path, each with its own lease; a line a
stale replica on another machine leaves behind (its lock and its view of the file are not
to be trusted over NFS) is written raw, as it would land.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from framework.errors import LeaseLostError, StorageError
from framework.sessions import Event, EventKind, JsonlLog, make_event
from framework.sessions.follow import follow_log

SESSION = "room:fence"
ROOT = Path(__file__).resolve().parents[2]


class Lease:
    """A room lease as the log sees it: an epoch, and a check that fails once it is lost."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.lost = False

    def check(self) -> None:
        if self.lost:
            raise LeaseLostError(f"lease of epoch {self.epoch} is gone")


def event(event_id: str, text: str = "", epoch: int = 0) -> Event:
    made = make_event(SESSION, EventKind.MESSAGE, "pm", text or event_id, id=event_id)
    return replace(made, epoch=epoch)


def replica(path: Path, epoch: int) -> JsonlLog:
    """A replica that has just taken the room: its lease set, its takeover marked."""
    log = JsonlLog(path)
    log.fence = Lease(epoch)
    log.mark_epoch()
    return log


def land(path: Path, *events: Event) -> None:
    """What a stale replica's one append leaves in the file: whole lines at the end."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, "".join(e.to_json() + "\n" for e in events).encode())
    os.close(fd)


def test_a_fenced_writer_stamps_its_epoch_and_an_unfenced_one_writes_as_before(
    tmp_path: Path,
) -> None:
    plain = Event("e1", "2026-12-04T03:00:00.000Z", SESSION, EventKind.MESSAGE, "pm", "hi")
    unfenced = JsonlLog(tmp_path / "plain.jsonl")
    assert unfenced.append(plain)
    assert (tmp_path / "plain.jsonl").read_bytes() == (
        b'{"id":"e1","ts":"2026-12-04T03:00:00.000Z","session":"room:fence",'
        b'"kind":"message","author":"pm","content":"hi"}\n'
    )
    fenced = replica(tmp_path / "fenced.jsonl", 3)
    assert fenced.append(plain) and fenced.append_many([event("e2"), event("e3")]) == [True] * 2
    lines = (tmp_path / "fenced.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["mark"] == "lease" and json.loads(lines[0])["epoch"] == 3
    assert all(line.startswith('{"id":"e') and '","epoch":3,"ts":' in line for line in lines[1:])
    assert [(e.id, e.epoch) for e in fenced.read_all()] == [("e1", 3), ("e2", 3), ("e3", 3)]
    assert fenced.tail(1)[0].id == "e3"  # the marker is no event: tail(1) is the last event
    fenced.mark_epoch()  # this epoch is already marked: nothing more
    assert len((tmp_path / "fenced.jsonl").read_text().splitlines()) == 4


async def test_a_stale_replicas_line_is_ignored_and_its_id_left_to_the_new_holder(
    tmp_path: Path,
) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    a = replica(path, 1)
    assert a.append(event("entry")) and a.append(event("t1"))
    seen: list[Event] = []

    async def follow() -> None:
        async for got in follow_log(path, poll=0.01):
            seen.append(got)

    streaming = asyncio.create_task(follow())
    b = replica(path, 2)  # B takes the room over; A is frozen, its lease check passed
    assert b.append(event("b1"))
    land(path, event("t2", "A's reply, written after B took over", epoch=1))

    reader = JsonlLog(path)
    ids = [e.id for e in reader.read_all()]
    assert ids == ["entry", "t1", "b1"]
    assert [(s.id, s.epoch, s.newer, s.line) for s in reader.stale] == [("t2", 1, 2, 6)]
    for n in range(1, 6):
        assert [e.id for e in reader.tail(n)] == ids[-n:]
    assert [s.id for s in reader.stale] == ["t2"]
    assert [e.id for e in reader.tail_until(lambda e: e.id == "t2")] == ids  # not found
    assert not reader.has("t2") and reader.find("t2") is None
    assert not b.has("t2")

    # B's re-run of that step has the same id: it is written, not skipped as a duplicate.
    assert b.append(event("t2", "B's reply"))
    assert not b.append(event("t2", "B's reply again"))
    for log in (reader, b, JsonlLog(path)):
        assert [e.id for e in log.read_all()] == ["entry", "t1", "b1", "t2"]
        found = log.find("t2")
        assert found is not None and (found.content, found.epoch) == ("B's reply", 2)
        assert [e.content for e in log.tail(2)] == ["b1", "B's reply"]
        assert log.tail_until(lambda e: e.id == "t2")[0].epoch == 2
    deadline = asyncio.get_running_loop().time() + 10
    while len(seen) < 4 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    streaming.cancel()
    assert [(e.id, e.content) for e in seen] == [
        ("entry", "entry"),
        ("t1", "t1"),
        ("b1", "b1"),
        ("t2", "B's reply"),
    ]


def test_tail_drops_a_stale_batch_even_when_its_window_starts_after_the_takeover(
    tmp_path: Path,
) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    a = replica(path, 1)
    assert a.append(event("before", "x" * 70_000))  # pushes the takeover out of the window
    replica(path, 2)
    # A's one stale batch is longer than tail's first window (64 KiB), so the window that
    # holds its last lines starts after B's marker: only the whole file knows they are stale.
    land(path, *(event(f"stale-{i}", "y" * 25_000, epoch=1) for i in range(3)))
    b = JsonlLog(path)
    b.fence = Lease(2)
    assert b.append(event("after"))
    reader = JsonlLog(path)
    for n in range(1, 5):
        assert [e.id for e in reader.tail(n)] == ["before", "after"][-n:]
    assert {s.id for s in reader.stale} == {"stale-0", "stale-1", "stale-2"}
    assert all(s.offset is not None and s.line is None for s in reader.stale)


def test_a_replica_that_lost_its_lease_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    a = replica(path, 1)
    assert a.append(event("t1"))
    before = path.read_bytes()
    assert isinstance(a.fence, Lease)
    a.fence.lost = True  # its deadline passed
    for write in (
        lambda: a.append(event("t2")),
        lambda: a.append_many([event("t2"), event("t3")]),
        a.mark_epoch,
    ):
        with pytest.raises(LeaseLostError):
            write()
    assert path.read_bytes() == before

    # A's check still passes (frozen past it), but B's takeover is in the file: on one
    # machine the lock lets A see it, and A refuses rather than write a stale line.
    a.fence.lost = False
    b = replica(path, 2)
    before = path.read_bytes()
    with pytest.raises(LeaseLostError, match="epoch 2"):
        a.append(event("t2"))
    with pytest.raises(LeaseLostError):
        a.append_many([event("t3")])
    # An unfenced writer (a forgotten fence) would write lines every reader drops: refused.
    with pytest.raises(StorageError, match="room leases"):
        JsonlLog(path).append(event("t4"))
    assert path.read_bytes() == before
    assert b.append(event("t2"))


def test_a_takeover_in_another_process_stops_this_one(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    a = replica(path, 4)
    assert a.append(event("t1"))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from framework.sessions import EventKind, JsonlLog, make_event\n"
        "class Lease:\n"
        "    epoch = 5\n"
        "    def check(self): pass\n"
        "log = JsonlLog(Path(sys.argv[1]))\n"
        "log.fence = Lease()\n"
        "log.mark_epoch()\n"
        "assert log.append(make_event('room:fence', EventKind.MESSAGE, 'pm', 'b', id='t2'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script, str(path)], check=True, env=env, timeout=60)
    with pytest.raises(LeaseLostError, match="epoch 5"):
        a.append(event("t2", "A's late reply"))
    assert [(e.id, e.epoch, e.content) for e in JsonlLog(path).read_all()] == [
        ("t1", 4, "t1"),
        ("t2", 5, "b"),
    ]


def test_an_old_log_reads_as_before_and_hand_written_epochs_count(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    old = [event(f"e{i}") for i in range(3)]
    path.write_text("".join(e.to_json() + "\n" for e in old))
    log = JsonlLog(path)
    assert log.read_all() == old and log.tail(2) == old[1:] and log.stale == []
    assert log.has("e1") and log.find("e1") == old[1]
    assert log.append(event("e3")) and not log.append(event("e1"))
    assert '"epoch"' not in path.read_text()

    # Lines written by hand, with the epoch in another place: parsed, and fenced the same.
    b = replica(path, 2)
    hand = {"ts": "2026-12-04T03:00:00.000Z", "session": SESSION, "kind": "message"}
    with path.open("a") as fh:
        fh.write(json.dumps({**hand, "author": "a", "content": "late", "id": "h1", "epoch": 1}))
        fh.write(
            "\n" + json.dumps({**hand, "author": "b", "content": "ok", "id": "h2", "epoch": 2})
        )
        fh.write("\n")
    reader = JsonlLog(path)
    assert [e.id for e in reader.read_all()][-2:] == ["e3", "h2"]
    assert [e.id for e in reader.tail(2)] == ["e3", "h2"]
    assert [s.id for s in reader.stale] == ["h1"]
    assert not reader.has("h1") and reader.has("h2")
    assert b.append(event("h1")) and not b.append(event("h2"))  # h1 was stale, h2 is there


def test_a_bad_epoch_is_a_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / f"{SESSION}.jsonl"
    good = event("e1").to_json()
    bad = [good.replace('"ts"', f'"epoch":{value},"ts"') for value in ('"3"', "true", "-1")]
    path.write_text("\n".join([*bad, good]) + "\n")
    log = JsonlLog(path)
    assert [e.id for e in log.read_all()] == ["e1"]
    assert [p.line for p in log.problems] == [1, 2, 3]
    assert all("epoch" in str(p) for p in log.problems)
