"""Reading a session log: its events in file order or from the end, bad lines set aside.

``JsonlLog``'s readers (``iter_events``, ``tail``) are these functions: a malformed line goes
to the log's ``problems``, a stale one (written after its writer lost its room lease,
``log_fence.py``) to its ``stale``, an unfinished last line is counted in ``torn_tail_bytes``
and left alone. The file is never changed.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

from framework.errors import JsonlError
from framework.sessions.events import Event
from framework.sessions.log_fence import EpochGate, StaleLine, parse_line

__all__ = ["BLOCK", "read_events", "read_tail"]

BLOCK = 64 * 1024
"""``tail``'s first window at the end of the file."""

_MALFORMED_FIX = "the raw line is kept in the file; fix or delete it by hand"


class ReadLog(Protocol):
    """What the readers need of a ``JsonlLog``: where it is, where to put what they skip."""

    path: Path
    problems: list[JsonlError]
    stale: list[StaleLine]
    torn_tail_bytes: int

    def epoch_rises(self) -> list[tuple[int, int]]:
        """Where the highest lease epoch rose in the file: ``(line offset, epoch)``."""
        ...


def read_events(log: ReadLog, strict: bool) -> Iterator[Event]:
    """The events of ``log`` in file order (``JsonlLog.iter_events``)."""
    log.problems, log.stale, log.torn_tail_bytes = [], [], 0
    if not log.path.exists():
        return
    gate = EpochGate()
    with log.path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.endswith(b"\n"):
                log.torn_tail_bytes = len(raw)
                return
            item, top = _parse(log, raw, number, strict), gate.top
            if item is None or gate.passes(item):
                if isinstance(item, Event):
                    yield item
            elif isinstance(item, Event):
                log.stale.append(StaleLine(number, None, item.id, item.epoch, top))


def read_tail(log: ReadLog, n: int) -> list[Event]:
    """The last ``n`` events of ``log``, oldest first (``JsonlLog.tail``)."""
    log.problems, log.stale, log.torn_tail_bytes = [], [], 0
    if n <= 0 or not log.path.exists():
        return []
    with log.path.open("rb") as fh:
        size, want = fh.seek(0, os.SEEK_END), BLOCK
        rises: list[tuple[int, int]] | None = None  # where the highest epoch rose, if fenced
        while True:
            start = max(0, size - want)
            fh.seek(start)
            data = fh.read(size - start)
            lines = data.split(b"\n")
            log.torn_tail_bytes = len(lines.pop())  # bytes after the last newline
            if start > 0 and lines:
                lines.pop(0)  # may begin mid-line
            log.problems, log.stale, found = [], [], []
            offset = size - log.torn_tail_bytes
            for i in range(len(lines) - 1, -1, -1):
                offset -= len(lines[i]) + 1
                event = _parse(log, lines[i], None, False, offset=offset)
                if not isinstance(event, Event):
                    continue  # malformed, blank, or a takeover marker
                # A fenced event is judged against the whole file before it, not just the
                # window: a stale writer's one batch (it checks its lease before each append,
                # so it can put at most one after the takeover) may sit right after the new
                # holder's marker, and a window that starts between the two would take it for
                # current. The log's id index, read in file order from the start, knows where
                # the highest epoch rose: exact, not a guess. Only the events after the last
                # fenced one (read first: this loop runs backwards) go unjudged, and those are
                # unfenced lines at the end of a log with epochs, which appends refuse.
                if rises is None and event.epoch:
                    rises = log.epoch_rises()
                if rises and event.epoch < (bar := _bar(rises, offset)):
                    log.stale.append(StaleLine(None, offset, event.id, event.epoch, bar))
                    continue
                found.append(event)
                if len(found) == n:
                    return found[::-1]
            if start == 0:
                return found[::-1]
            want *= 4


def _bar(rises: list[tuple[int, int]], offset: int) -> int:
    """The highest epoch before byte ``offset``, from where it rose (offset order)."""
    at = bisect_left(rises, (offset,))
    return rises[at - 1][1] if at else 0


def _parse(
    log: ReadLog, raw: bytes, line: int | None, strict: bool, *, offset: int | None = None
) -> Event | int | None:
    """The line's event, a takeover marker's epoch, or None (blank, or malformed)."""
    if not raw.strip():
        return None  # a blank line carries nothing; not worth a warning
    field: str | None = None
    try:
        return parse_line(raw)
    except KeyError as exc:
        field = str(exc.args[0])
        reason = f"missing field {field!r}"
    except (ValueError, TypeError) as exc:
        reason = str(exc)
    where = "" if line is not None else f" (the line at byte {offset})"
    msg = f"not a valid event{where}: {reason}"
    error = JsonlError(msg, file=log.path, line=line, field=field, fix=_MALFORMED_FIX)
    if strict:
        raise error
    log.problems.append(error)
    return None
