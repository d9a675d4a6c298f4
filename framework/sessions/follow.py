"""Follow a session's log: every event after a given one, then new ones as they are appended.

The log file is the source of truth, so a follower sees what any process appends (a server, the
CLI, a second worker) without a message bus: it reads whole lines from a byte offset and checks
the file's size now and then. A line still being written (no newline yet) is left for the next
look, so a follower never sees half an event. Like the log's readers it reads in file order
from the start and drops the lines a replica wrote after it lost its room lease
(``log_fence.py``), so a stream never shows an event every other reader ignores.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

from framework.sessions.events import Event
from framework.sessions.log_fence import EpochGate, parse_line

CHUNK = 1 << 20
"""Bytes read at a time (a long log is read in several)."""

POLL_SECONDS = 0.1
"""How often a follower looks for new lines (a stat call; cheap next to a model turn)."""


async def follow_log(
    path: Path, *, after: str | None = None, poll: float = POLL_SECONDS
) -> AsyncIterator[Event]:
    """Yield the events of the log at ``path`` after the one with id ``after``, then live ones.

    ``after`` None starts at the first event. An id the log does not hold (a client's stale
    ``Last-Event-ID``) also starts at the first event: the caller may see events twice, never
    miss one. Malformed and stale lines are skipped (the log's readers report them). Runs
    until cancelled.
    """
    boundary = 0  # where the first unfinished line starts: everything before it was read
    seen_to = 0  # the file size at the last read
    skipping = after is not None
    held: list[Event] = []  # events read while looking for ``after``
    gate = EpochGate()  # the highest lease epoch so far: lines below it are stale
    while True:
        # Read again from the line boundary: a torn tail a writer cut off (quarantined) and
        # wrote over is then read as what it became, never glued to the new line.
        chunk = _read_from(path, boundary, seen_to)
        if chunk:
            seen_to = boundary + len(chunk)
            lines = chunk.split(b"\n")
            unfinished = lines.pop()
            boundary = seen_to - len(unfinished)
            for raw in lines:
                event = _parse(raw)
                if event is None or not gate.passes(event) or isinstance(event, int):
                    continue  # malformed, stale, or a takeover marker
                if skipping:
                    if event.id == after:
                        skipping, held = False, []
                    else:
                        held.append(event)
                    continue
                yield event
            if not lines:
                await asyncio.sleep(poll)  # only an unfinished line: wait for its newline
            continue  # read on before sleeping: a long log comes in several chunks
        if skipping and held:
            # Caught up without meeting ``after``: it is not in this log, so start from the top.
            skipping = False
            for event in held:
                yield event
            held = []
        elif skipping and not held and boundary > 0:
            skipping = False
        await asyncio.sleep(poll)


def _read_from(path: Path, offset: int, seen_to: int) -> bytes:
    try:
        size = os.stat(path).st_size
        if size == seen_to or size <= offset:
            return b""
        with open(path, "rb") as handle:
            handle.seek(offset)
            data = handle.read(CHUNK)
            while b"\n" not in data:  # one line longer than a chunk: read on to its end
                more = handle.read(CHUNK)
                if not more:
                    break
                data += more
            return data
    except FileNotFoundError:
        return b""  # a session with no events yet: its log appears with the first one


def _parse(raw: bytes) -> Event | int | None:
    if not raw.strip():
        return None
    try:
        return parse_line(raw)
    except (ValueError, KeyError, TypeError):
        return None
