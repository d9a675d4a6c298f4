"""How the writers of one session log exclude each other, and the marker that keeps them agreeing.

Two lock kinds exist (``Settings.lock``): ``flock`` on the log's own descriptor, or
``filelock.FileLock`` on ``<log>.lock``. They do not exclude each other: a flock holder and a
filelock holder both "have the lock" at once, so their duplicate-id checks race (4 flock and
4 filelock writers on one log stored 3 events twice, silently). So the first writer of a log
records its kind in ``<log>.lock-kind``, a file created atomically and never rewritten, and
a process set to the other kind is refused with :class:`~framework.errors.StorageError`
before it writes anything: as soon as it opens the log's descriptor (a writer's ``has`` or
append). A log from before the marker existed takes the kind of its next writer. Plain reads
(``read_all``, ``tail``) take no lock and never look at the marker.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Literal

from filelock import FileLock

from framework.errors import StorageError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, filelock takes over
    fcntl = None  # type: ignore[assignment]

__all__ = ["MARKER_SUFFIX", "LockKind", "LogLock", "claim_lock_kind", "flock_wait", "marker_path"]

LockKind = Literal["flock", "filelock"]
"""``flock`` on the data file's descriptor, or ``filelock.FileLock`` on ``<path>.lock``."""
_KINDS: dict[str, LockKind] = {"flock": "flock", "filelock": "filelock"}

MARKER_SUFFIX = ".lock-kind"
"""``<log>.lock-kind`` holds the lock kind every writer of ``<log>`` must use."""

_BUSY_TRIES, _YIELD_TRIES = 5, 200  # flock: tries before yielding the CPU, before blocking
_FILELOCK_POLL = 0.0001  # filelock sleeps between tries; its 50 ms default dwarfs an append
# Only where hard links are missing can a marker be seen empty (created, not yet written);
# its writer needs microseconds, so an empty marker this old was left by a crash.
_EMPTY_MARKER_WAIT = 2.0


class LogLock:
    """The inter-process lock of one log file, of one kind; the caller holds the thread lock."""

    def __init__(self, path: Path, kind: LockKind) -> None:
        self.path = path
        self.kind: LockKind = kind if fcntl is not None else "filelock"
        self._file_lock: FileLock | None = None

    def claim(self, *, record: bool) -> bool:
        """Check the log's recorded lock kind (see :func:`claim_lock_kind`)."""
        return claim_lock_kind(self.path, self.kind, record=record)

    def acquire(self, fd: int) -> None:
        """Take the lock; ``fd`` is the log's descriptor (flock locks it)."""
        if self.kind == "flock":
            flock_wait(fd)
            return
        if self._file_lock is None:
            self._file_lock = FileLock(f"{self.path}.lock")
        self._file_lock.acquire(poll_interval=_FILELOCK_POLL)

    def release(self, fd: int) -> None:
        """Release what :meth:`acquire` took."""
        if self.kind == "flock":
            fcntl.flock(fd, fcntl.LOCK_UN)
        elif self._file_lock is not None:
            self._file_lock.release()

    def forget_after_fork(self) -> None:
        """In a forked child: drop the parent's FileLock (the child takes its own)."""
        self._file_lock = None


def flock_wait(fd: int) -> None:
    """``flock(LOCK_EX)``, but retry, then yield the CPU, before sleeping in the kernel.

    An append holds the lock for microseconds, a sleep in flock costs a wake-up per hand-over:
    8 writers on 2 cores ran a bare flock+write loop at 0.35x unlocked blocking, 0.6x so."""
    for attempt in range(_YIELD_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if attempt >= _BUSY_TRIES:
                os.sched_yield()
    fcntl.flock(fd, fcntl.LOCK_EX)  # held for long (a stopped process?): sleep until free


def marker_path(log: Path) -> Path:
    """``<log>.lock-kind``: where ``log``'s lock kind is recorded."""
    return log.with_name(log.name + MARKER_SUFFIX)


def claim_lock_kind(log: Path, kind: LockKind, *, record: bool = True) -> bool:
    """Make sure ``log`` is written with ``kind`` only; whether its marker now says so.

    With ``record``, a log with no marker gets one holding ``kind`` (of two first writers
    exactly one wins, and the other is then checked against it); without, a missing marker is
    left missing (False). Raises :class:`StorageError` when the marker names the other kind,
    or cannot be read or created; nothing is written to the log then.
    """
    marker = marker_path(log)
    for _attempt in range(3):  # a marker deleted between create and read: create it again
        recorded = _read_marker(marker)
        if recorded is None:
            if not record:
                return False
            _create_marker(log, marker, kind)
            continue
        if recorded != kind:
            raise StorageError(_mixed_message(log, marker, recorded, kind))
        return True
    raise StorageError(f"cannot record the lock kind of {log}: {marker} keeps disappearing")


def _mixed_message(log: Path, marker: Path, recorded: LockKind, kind: LockKind) -> str:
    return (
        f"session log {log} is written with the '{recorded}' lock (recorded in {marker.name}), "
        f"but this process is set to the '{kind}' lock. The two kinds do not exclude each "
        f"other, so mixing them could store one event twice; nothing was written.\n"
        f"  fix: set STAFFROOM_LOCK={recorded} (Settings.lock='{recorded}') for every process "
        f"that writes this log; or, to move the log to '{kind}', stop every process writing "
        f"it and delete {marker}"
    )


def _read_marker(marker: Path) -> LockKind | None:
    """The kind ``marker`` records; None when there is no marker."""
    waited_since: float | None = None
    while True:
        try:
            text = marker.read_bytes().decode("ascii", errors="replace").strip()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageError(
                f"cannot read {marker} (the lock kind of its session log): {exc.strerror or exc}"
            ) from exc
        if text:
            found = _KINDS.get(text)
            if found is None:
                raise StorageError(_bad_marker(marker, f"holds {text[:40]!r}"))
            return found
        now = time.monotonic()
        waited_since = now if waited_since is None else waited_since
        if now - waited_since > _EMPTY_MARKER_WAIT:
            raise StorageError(_bad_marker(marker, "is empty"))
        time.sleep(0.001)


def _bad_marker(marker: Path, what: str) -> str:
    return (
        f"{marker} {what}; it should hold the lock kind of its session log, 'flock' or "
        f"'filelock'.\n  fix: write the kind every writer of the log uses (STAFFROOM_LOCK, "
        f"default flock) into it, or delete it while no process writes the log"
    )


def _create_marker(log: Path, marker: Path, kind: LockKind) -> None:
    """Create ``marker`` holding ``kind`` unless it exists; it is never seen half-written.

    The text goes into a temporary file first and a hard link puts it in place: ``link``
    fails when the name exists, so of two first writers exactly one wins, atomically.
    """
    data = f"{kind}\n".encode()
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=marker.parent, prefix=f".{marker.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(tmp, marker)
            except FileExistsError:
                pass  # another writer was first: its kind stands (the caller checks it)
            except OSError:  # no hard links on this file system (FAT, some network mounts)
                _create_exclusive(marker, data)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(
            f"cannot record the lock kind of {log} in {marker}: {exc.strerror or exc}"
        ) from exc


def _create_exclusive(marker: Path, data: bytes) -> None:
    """``O_CREAT | O_EXCL`` then write: still one winner, but readers may see it empty."""
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
