"""A session's history: an append-only JSONL file, one :class:`Event` per line.

Several processes (a CLI, a server, a benchmark) may append to one file at once. Each append
holds an inter-process lock (``log_lock.py``: every writer of a file must use the same kind),
skips ids already in the file, and issues one ``os.write`` of whole lines on an ``O_APPEND``
descriptor, so lines never interleave.

The API is synchronous on purpose: an append takes microseconds (lock, ``lseek``, one
``write``, unlock), while handing it to a thread from async code costs more than the write.
Call it straight from the event loop. Only ``sync()`` (an ``fsync``) can take milliseconds;
the runtime calls it once per turn.

Under room leases (several replicas, ``log_fence.py``) ``fence`` stamps appends with the
lease's epoch, ``mark_epoch()`` marks a takeover, and every reader drops the lines a replica
wrote after it lost its lease (kept in the file, listed in ``stale``).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Literal

from framework.errors import JsonlError, StorageError
from framework.sessions.events import Event
from framework.sessions.id_index import id_key, plain_keys
from framework.sessions.log_fence import LogFence, StaleLine, mark_line
from framework.sessions.log_index import LogIndex
from framework.sessions.log_lock import LockKind, LogLock, flock_wait
from framework.sessions.log_reading import read_events, read_tail

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


class JsonlLog(LogIndex):
    """One session's append-only event log.

    ``problems`` holds the malformed lines the latest read skipped (``JsonlError`` with file
    and 1-based line); ``torn_tail_bytes`` the size of the unfinished last line it ignored
    (left by a writer killed mid-write, or an append still in flight); ``stale`` the event
    lines it dropped as written after their writer lost its room lease (``log_fence.py``).
    ``fence``, when set, fences every append with a room lease.
    """

    def __init__(
        self, path: Path, *, durability: Durability = "turn", lock: LockKind = "flock"
    ) -> None:
        if durability not in ("turn", "event", "none") or lock not in ("flock", "filelock"):
            raise ValueError(f"unknown durability {durability!r} or lock {lock!r}")
        super().__init__(path)
        self.durability: Durability = durability
        self._process_lock = LogLock(self.path, lock)
        self.lock: LockKind = self._process_lock.kind
        self.problems: list[JsonlError] = []
        self.stale: list[StaleLine] = []
        self.torn_tail_bytes = 0
        self.fence: LogFence | None = None
        self._fd: int | None = None
        self._claimed = False  # the marker was seen to name our lock kind since opening
        # flock excludes other open file descriptions, not other threads sharing ours.
        self._thread_lock = threading.Lock()
        self._checked = -_RECHECK  # monotonic time of the last fstat link check
        _live_logs.add(self)

    def append(self, event: Event) -> bool:
        """Append one event; return False (writing nothing) if its id is already in the file.

        With a ``fence``, raises :class:`~framework.errors.LeaseLostError` (writing nothing)
        once the lease is lost, and stamps the event with its epoch.
        """
        epoch = 0
        if (fence := self.fence) is not None:
            fence.check()
            event = replace(event, epoch=(epoch := fence.epoch))
        line = (event.to_json() + "\n").encode()
        key = id_key(event.id)
        with self._thread_lock:
            ids = self._ids
            if key in ids:  # ids never leave a file: a known replay needs no lock
                return False
            fd = self._fd
            if fd is None or self.lock != "flock" or time.monotonic() - self._checked > _RECHECK:
                return self._append_lines([key], [line], epoch)[0]  # first use, filelock, recheck
            # The hot path, inlined: flock, lseek, [read what others added], write, unlock.
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                flock_wait(fd)
            try:
                size, end = os.lseek(fd, 0, os.SEEK_END), self._indexed
                new: list[bytes] = []
                if size != end:  # others' lines since: index them (one pread, one regex)
                    found = None  # a fenced log's lines need their epochs: general path
                    if end and not self._top:
                        found = plain_keys(os.pread(fd, size - end + 1, end - 1))
                    if found is None:  # first read, torn tail, odd lines, epochs: general path
                        new = self._read_new(fd, size)
                    else:
                        new, self._indexed = found, size
                refused = self._refusal(epoch)
                fresh = refused is None and key not in new and key not in ids
                if fresh:
                    self._write(fd, line, epoch)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
            if new:
                ids.update(new)  # after unlocking: other writers need not wait for it
            if refused is not None:
                raise refused
            if fresh:
                ids.add(key)
        if fresh and self.durability == "event":
            os.fsync(fd)
        return fresh

    def append_many(self, events: Iterable[Event]) -> list[bool]:
        """Append several events under one lock; one flag per event as in :meth:`append`.

        The new lines go out in one ``write``; an id repeated inside the batch counts once.
        A ``fence`` is checked once and stamps every event, as in :meth:`append`.
        """
        events, epoch = list(events), 0
        if not events:
            return []
        if (fence := self.fence) is not None:
            fence.check()
            epoch = fence.epoch
            events = [replace(event, epoch=epoch) for event in events]
        lines = [(event.to_json() + "\n").encode() for event in events]
        keys = [id_key(event.id) for event in events]
        with self._thread_lock:
            return self._append_lines(keys, lines, epoch)

    def mark_epoch(self) -> None:
        """Mark the takeover of ``fence``'s epoch in the file (``log_fence.py``).

        A new lease holder calls it right after taking the room and before it reads the log:
        every line the previous holder appends after the marker is stale to every reader.
        Writes nothing when the file already holds this epoch; raises like :meth:`append`.
        """
        if (fence := self.fence) is None:
            raise ValueError("mark_epoch() needs a fence: set JsonlLog.fence first")
        fence.check()
        epoch = fence.epoch
        with self._thread_lock:
            fd, size = self._lock_checked()
            try:
                known = self._read_new(fd, size) if size != self._indexed else []
                refused = self._refusal(epoch)
                marked = refused is None and self._top < epoch
                if marked:
                    self._write(fd, mark_line(epoch), epoch)
            finally:
                self._end(fd)
            self._ids.update(known)
            if refused is not None:
                raise refused
            if marked and self.durability != "none":
                os.fsync(fd)  # the fence point must outlive a crash of this machine

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
            return self._catch_up() and id_key(event_id) in self._ids

    def read_all(self, *, strict: bool = False) -> list[Event]:
        """All events in file order; lenient unless ``strict`` (see :meth:`iter_events`)."""
        return list(self.iter_events(strict=strict))

    def iter_events(self, *, strict: bool = False) -> Iterator[Event]:
        """Stream events in file order.

        A malformed line is skipped and recorded in ``problems`` (``strict=True`` raises its
        ``JsonlError`` instead); a stale one (written after its writer lost its room lease) is
        skipped and recorded in ``stale``; an unfinished last line is ignored. The file is
        never changed.
        """
        return read_events(self, strict)

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
        does not depend on the file's length. Malformed lines go to ``problems`` and stale
        ones to ``stale`` with their byte offset (a line number would need the whole file).
        """
        return read_tail(self, n)

    def epoch_rises(self) -> list[tuple[int, int]]:
        """Where the highest lease epoch rose in the file, ``(line offset, epoch)`` in file
        order (empty for an unfenced log); reads what the index has not seen yet."""
        with self._thread_lock:
            self._catch_up()
            return list(self._rises)

    def _append_lines(self, keys: list[bytes], lines: list[bytes], epoch: int = 0) -> list[bool]:
        """The general append (thread lock held): lock, catch up, write the fresh lines."""
        fd, size = self._lock_checked()
        flags: list[bool] = []
        out: list[bytes] = []
        try:
            known = set(self._read_new(fd, size) if size != self._indexed else ())
            if (refused := self._refusal(epoch)) is not None:
                keys = lines = []
            for key, line in zip(keys, lines, strict=True):
                flags.append(key not in self._ids and key not in known)
                if flags[-1]:
                    known.add(key)
                    out.append(line)
            if out:
                self._write(fd, b"".join(out), epoch)
        finally:
            self._end(fd)
        self._ids.update(known)
        if refused is not None:
            raise refused
        if out and self.durability == "event":
            os.fsync(fd)
        return flags

    def _catch_up(self) -> bool:
        """Index the complete lines others added (thread lock held); False: no file yet."""
        if self._fd is None and not self.path.exists():
            return False
        fd = self._open(create=False)
        # No lock: index complete lines only; repairs wait for the next locked append.
        self._ids.update(self._read_new(fd, os.lseek(fd, 0, os.SEEK_END), repair=False))
        return True

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
        self._fd, self._checked, self._claimed = None, -_RECHECK, False
        self._reset_index()
