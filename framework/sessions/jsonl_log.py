"""A session's history: an append-only JSONL file, one :class:`Event` per line.

Several processes (a CLI, a server, a benchmark) may append to one file at once. Each append
holds an inter-process lock (``log_lock.py``: every writer of a file must use the same kind),
skips ids already in the file, and issues one ``os.write`` of whole lines on an ``O_APPEND``
descriptor, so lines never interleave.

The API is synchronous on purpose: an append takes microseconds (lock, ``lseek``, one
``write``, unlock), while handing it to a thread from async code costs more than the write.
Call it straight from the event loop. Only ``sync()`` (an ``fsync``) can take milliseconds;
the runtime calls it once per turn.
"""

from __future__ import annotations

import json
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any, Literal

from framework.errors import JsonlError, StorageError
from framework.sessions.events import Event, utc_now
from framework.sessions.id_index import block_keys, id_key, plain_keys
from framework.sessions.log_lock import LockKind, LogLock, flock_wait

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, filelock takes over
    fcntl = None  # type: ignore[assignment]

__all__ = ["Durability", "JsonlLog", "LockKind"]

Durability = Literal["turn", "event", "none"]
"""When appends reach the disk: at ``sync()`` (end of turn), inside every append, or never."""

# A replaced file (save-by-rename) shows as a link count of 0 in fstat; in a burst of appends
# that check runs at most this often, and lseek (a third of fstat's cost) gives the size.
_RECHECK = 0.05
_BLOCK, _INDEX_CHUNK = 64 * 1024, 1024 * 1024  # tail()'s first window; the index's read step
_MALFORMED_FIX = "the raw line is kept in the file; fix or delete it by hand"

# A forked child must not share our descriptors: flock belongs to the open file description,
# so parent and child would both "hold" the lock at once.
_live_logs: weakref.WeakSet[JsonlLog] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for log in list(_live_logs):  # (a thread that is gone may have held the thread lock)
        log._thread_lock = threading.Lock()
        log._process_lock.forget_after_fork()
        log._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class JsonlLog:
    """One session's append-only event log.

    ``problems`` holds the malformed lines the latest read skipped (``JsonlError`` with file
    and 1-based line); ``torn_tail_bytes`` the size of the unfinished last line it ignored
    (left by a writer killed mid-write, or an append still in flight).
    """

    def __init__(
        self, path: Path, *, durability: Durability = "turn", lock: LockKind = "flock"
    ) -> None:
        if durability not in ("turn", "event", "none") or lock not in ("flock", "filelock"):
            raise ValueError(f"unknown durability {durability!r} or lock {lock!r}")
        self.path = Path(path)
        self.durability: Durability = durability
        self._process_lock = LogLock(self.path, lock)
        self.lock: LockKind = self._process_lock.kind
        self.problems: list[JsonlError] = []
        self.torn_tail_bytes = 0
        self._fd: int | None = None
        self._claimed = False  # the marker was seen to name our lock kind since opening
        # flock excludes other open file descriptions, not other threads sharing ours.
        self._thread_lock = threading.Lock()
        self._ids: set[bytes] = set()  # raw JSON text of the ids in the first _indexed bytes
        self._indexed = 0  # always a line boundary
        self._checked = -_RECHECK  # monotonic time of the last fstat link check
        _live_logs.add(self)

    def append(self, event: Event) -> bool:
        """Append one event; return False (writing nothing) if its id is already in the file."""
        line = (event.to_json() + "\n").encode()
        key = id_key(event.id)
        with self._thread_lock:
            ids = self._ids
            if key in ids:  # ids never leave a file: a known replay needs no lock
                return False
            fd = self._fd
            if fd is None or self.lock != "flock" or time.monotonic() - self._checked > _RECHECK:
                return self._append_lines([key], [line])[0]  # first use, filelock, recheck
            # The hot path, inlined: flock, lseek, [read what others added], write, unlock.
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                flock_wait(fd)
            try:
                size, end = os.lseek(fd, 0, os.SEEK_END), self._indexed
                new: list[bytes] = []
                if size != end:  # others' lines since: index them (one pread, one regex)
                    found = plain_keys(os.pread(fd, size - end + 1, end - 1)) if end else None
                    if found is None:  # first read, torn tail, odd lines: the general path
                        new = self._read_new(fd, size)
                    else:
                        new, self._indexed = found, size
                fresh = key not in new and key not in ids
                if fresh:
                    self._write(fd, line)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if new:
                ids.update(new)  # after unlocking: other writers need not wait for it
            if fresh:
                ids.add(key)
        if fresh and self.durability == "event":
            os.fsync(fd)
        return fresh

    def append_many(self, events: Iterable[Event]) -> list[bool]:
        """Append several events under one lock; one flag per event as in :meth:`append`.

        The new lines go out in one ``write``; an id repeated inside the batch counts once.
        """
        items = [(event, (event.to_json() + "\n").encode()) for event in events]
        if not items:
            return []
        keys = [id_key(event.id) for event, _line in items]
        with self._thread_lock:
            return self._append_lines(keys, [line for _event, line in items])

    def sync(self) -> None:
        """Flush appended lines to disk (``fsync``), unless durability is ``"none"``."""
        with self._thread_lock:
            if self._fd is not None and self.durability != "none":
                os.fsync(self._fd)

    def close(self) -> None:
        """Close the descriptor (a later call reopens it)."""
        with self._thread_lock:
            self._forget()

    def has(self, event_id: str) -> bool:
        """Whether an event with this id is in the file (other processes' lines included).

        Writers ask this before they write, so like an append it raises
        :class:`~framework.errors.StorageError` when the log is pinned to the other lock kind.
        """
        with self._thread_lock:
            if self._fd is None and not self.path.exists():
                return False
            fd = self._open(create=False)
            # No lock: index complete lines only; repairs wait for the next locked append.
            self._ids.update(self._read_new(fd, os.lseek(fd, 0, os.SEEK_END), repair=False))
            return id_key(event_id) in self._ids

    def read_all(self, *, strict: bool = False) -> list[Event]:
        """All events in file order; lenient unless ``strict`` (see :meth:`iter_events`)."""
        return list(self.iter_events(strict=strict))

    def iter_events(self, *, strict: bool = False) -> Iterator[Event]:
        """Stream events in file order.

        A malformed line is skipped and recorded in ``problems`` (``strict=True`` raises its
        ``JsonlError`` instead); an unfinished last line is ignored. The file is never changed.
        """
        self.problems, self.torn_tail_bytes = [], 0
        if not self.path.exists():
            return
        with self.path.open("rb") as fh:
            for number, raw in enumerate(fh, start=1):
                if not raw.endswith(b"\n"):
                    self.torn_tail_bytes = len(raw)
                    return
                event = self._parse(raw, number, strict)
                if event is not None:
                    yield event

    def tail_until(self, found: Callable[[Event], bool]) -> list[Event]:
        """The events from the newest one ``found`` accepts to the end (all, if none does).

        Reads back from the end in growing chunks, so the cost follows how far back that
        event is, not the file's length.
        """
        chunk = 256
        while True:
            events = self.tail(chunk)
            for i in range(len(events) - 1, -1, -1):
                if found(events[i]):
                    return events[i:]
            if len(events) < chunk:
                return events
            chunk *= 4

    def find(self, event_id: str) -> Event | None:
        """The event with this id, or None (read back from the end: cost follows its age)."""
        if not self.has(event_id):
            return None
        events = self.tail_until(lambda e: e.id == event_id)
        return events[0] if events and events[0].id == event_id else None

    def tail(self, n: int) -> list[Event]:
        """The last ``n`` events, oldest first, reading backwards from the end of the file.

        A window at the end widens only while it holds fewer than ``n`` events, so the cost
        does not depend on the file's length. Malformed lines go to ``problems`` with their
        byte offset (a line number would need the whole file).
        """
        self.problems, self.torn_tail_bytes = [], 0
        if n <= 0 or not self.path.exists():
            return []
        with self.path.open("rb") as fh:
            size, want = fh.seek(0, os.SEEK_END), _BLOCK
            while True:
                start = max(0, size - want)
                fh.seek(start)
                lines = fh.read(size - start).split(b"\n")
                self.torn_tail_bytes = len(lines.pop())  # bytes after the last newline
                if start > 0 and lines:
                    lines.pop(0)  # may begin mid-line
                self.problems, found = [], []
                offset = size - self.torn_tail_bytes
                for raw in reversed(lines):
                    offset -= len(raw) + 1
                    event = self._parse(raw, None, False, offset=offset)
                    if event is not None:
                        found.append(event)
                        if len(found) == n:
                            return found[::-1]
                if start == 0:
                    return found[::-1]
                want *= 4

    # -- internals ---------------------------------------------------------------------------
    # _ids holds the raw JSON text of every id (between the quotes, as to_json writes it) in
    # the first _indexed bytes. Under the lock an append reads only what other writers added
    # since, and pulls their ids out with one regex call instead of parsing JSON.

    def _append_lines(self, keys: list[bytes], lines: list[bytes]) -> list[bool]:
        """The general append (thread lock held): lock, catch up, write the fresh lines."""
        fd, size = self._lock_checked()
        flags: list[bool] = []
        try:
            known = set(self._read_new(fd, size) if size != self._indexed else ())
            out = []
            for key, line in zip(keys, lines, strict=True):
                flags.append(key not in self._ids and key not in known)
                if flags[-1]:
                    known.add(key)
                    out.append(line)
            if out:
                self._write(fd, b"".join(out))
        finally:
            self._end(fd)
        self._ids.update(known)
        if out and self.durability == "event":
            os.fsync(fd)
        return flags

    def _lock_checked(self) -> tuple[int, int]:
        """Lock the file that is at ``path`` now (reopening a replaced one); fd and size.

        The log's lock kind is recorded (or checked) before the file is even created, so a
        writer of the other kind writes nothing.
        """
        while True:
            if not self._claimed:
                self._claimed = self._process_lock.claim(record=True)
            fd = self._open(create=True)
            self._process_lock.acquire(fd)
            st = os.fstat(fd)
            if st.st_nlink > 0:
                self._checked = time.monotonic()
                return fd, st.st_size
            # Deleted or replaced (an editor's save-by-rename) while we kept it open:
            # reopen by path so we write where readers look.
            self._end(fd)
            self._forget()

    def _end(self, fd: int) -> None:
        self._process_lock.release(fd)

    def _open(self, *, create: bool) -> int:
        if self._fd is None:
            if not self._claimed:  # has(): refuse a process set to the other kind early
                self._claimed = self._process_lock.claim(record=False)
            flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | create * os.O_CREAT
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._fd = os.open(self.path, flags, 0o644)
            except OSError as exc:
                raise StorageError(f"cannot open session log {self.path}: {exc}") from exc
        return self._fd

    def _forget(self) -> None:
        """Close the descriptor and drop the index (after close, a fork or a replaced file)."""
        if self._fd is not None:
            with suppress(OSError):
                os.close(self._fd)
        self._fd, self._indexed, self._checked, self._claimed = None, 0, -_RECHECK, False
        self._ids.clear()

    def _write(self, fd: int, data: bytes) -> None:
        """Write whole lines at the end; on failure cut the file back so no torn line stays."""
        try:
            done = os.write(fd, data)
            while done < len(data):  # a regular file writes short only on a full disk
                done += os.write(fd, data[done:])
        except OSError as exc:
            with suppress(OSError):  # if even this fails, the next append quarantines it
                os.ftruncate(fd, self._indexed)
            raise StorageError(f"cannot append to session log {self.path}: {exc}") from exc
        self._indexed += len(data)

    def _read_new(self, fd: int, size: int, *, repair: bool = True) -> list[bytes]:
        """Index the complete lines in ``[_indexed, size)``; return their ids.

        With ``repair`` (lock held) an unfinished last line is quarantined and cut off;
        without, it is left for later.
        """
        if size < self._indexed:  # shrunk behind our back (a hand edit): start over
            self._ids.clear()
            self._indexed = 0
        keys: list[bytes] = []
        want = _INDEX_CHUNK
        while self._indexed < size:
            start = self._indexed
            count = min(size - start, want)
            # Read from the newline before ``start`` so the regex sees every line start.
            block = os.pread(fd, count + 1, start - 1) if start else b"\n" + os.pread(fd, count, 0)
            if block[:1] != b"\n":  # rewritten in place behind our back: start over
                self._ids.clear()
                self._indexed = 0
                continue
            at_eof = len(block) <= count or start + count >= size
            end = block.rfind(b"\n") + 1  # block[i] is at file offset start - 1 + i
            if end == 1 and not at_eof:
                want *= 2  # a single line longer than the chunk: read more at once
                continue
            if end < len(block) and at_eof and repair:
                self._quarantine(fd, start - 1 + end, block[end:])
            self._indexed = start - 1 + end
            keys += block_keys(block, end)
            if at_eof:
                break
        return keys

    def _quarantine(self, fd: int, offset: int, torn: bytes) -> None:
        """Move an unfinished last line to ``<path>.torn`` (kept, with a header) and cut it."""
        header = f"# {utc_now()} torn tail of {self.path.name} at byte {offset}, {len(torn)} bytes"
        try:
            with open(f"{self.path}.torn", "ab") as fh:
                fh.write(header.encode() + b"\n" + torn + b"\n")
                fh.flush()
                os.fsync(fh.fileno())  # the copy must be on disk before the original is cut
            os.ftruncate(fd, offset)
        except OSError as exc:
            raise StorageError(f"cannot quarantine torn tail of {self.path}: {exc}") from exc

    def _parse(
        self, raw: bytes, line: int | None, strict: bool, *, offset: int | None = None
    ) -> Event | None:
        if not raw.strip():
            return None  # a blank line carries nothing; not worth a warning
        field: str | None = None
        try:
            data: Any = json.loads(raw)
            if not isinstance(data, dict):
                raise TypeError(f"expected a JSON object, got {type(data).__name__}")
            return Event.from_dict(data)
        except KeyError as exc:
            field = str(exc.args[0])
            reason = f"missing field {field!r}"
        except (ValueError, TypeError) as exc:
            reason = str(exc)
        where = "" if line is not None else f" (the line at byte {offset})"
        msg = f"not a valid event{where}: {reason}"
        error = JsonlError(msg, file=self.path, line=line, field=field, fix=_MALFORMED_FIX)
        if strict:
            raise error
        self.problems.append(error)
        return None
