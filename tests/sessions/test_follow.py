"""Following a log: resume after an id, torn tails cut off by a writer, very long lines."""

from __future__ import annotations

import asyncio
from pathlib import Path

from framework.sessions.events import EventKind, make_event
from framework.sessions.follow import follow_log


def line(n: int, text: str | None = None) -> str:
    event = make_event("room:x", EventKind.MESSAGE, "alice", text or f"t{n}", id=f"e{n}")
    return event.to_json() + "\n"


async def collect(path: Path, seen: list[str], after: str | None = None) -> None:
    async for event in follow_log(path, after=after, poll=0.02):
        seen.append(event.id)


async def wait_for(seen: list[str], count: int) -> None:
    for _ in range(500):
        if len(seen) >= count:
            return
        await asyncio.sleep(0.02)


async def test_a_torn_tail_cut_off_and_written_over_is_read_as_it_became(tmp_path: Path) -> None:
    log = tmp_path / "room:x.jsonl"
    log.write_text(line(1) + line(2)[:15], encoding="utf-8")  # a writer died mid-line
    seen: list[str] = []
    task = asyncio.create_task(collect(log, seen))
    await wait_for(seen, 1)
    with open(log, "r+b") as handle:  # the next writer moves the torn bytes aside...
        handle.truncate(len(line(1).encode()))
    with open(log, "ab") as handle:  # ... and appends whole lines
        handle.write((line(2) + line(3)).encode())
    await wait_for(seen, 3)
    task.cancel()
    assert seen == ["e1", "e2", "e3"]


async def test_resume_after_an_id_and_a_line_longer_than_a_read(tmp_path: Path) -> None:
    log = tmp_path / "room:x.jsonl"
    log.write_text(line(1) + line(2), encoding="utf-8")
    seen: list[str] = []
    task = asyncio.create_task(collect(log, seen, after="e1"))
    await wait_for(seen, 1)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(line(3, "x" * 3_000_000))
    await wait_for(seen, 2)
    task.cancel()
    assert seen == ["e2", "e3"]


async def test_an_unknown_after_id_replays_from_the_start(tmp_path: Path) -> None:
    log = tmp_path / "room:x.jsonl"
    log.write_text(line(1) + line(2), encoding="utf-8")
    seen: list[str] = []
    task = asyncio.create_task(collect(log, seen, after="not-there"))
    await wait_for(seen, 2)
    task.cancel()
    assert seen == ["e1", "e2"]
