"""Exclusion around a file's read-modify-write: the one seam every file store locks through.

MEMORY.md (with its ``facts.json``), HISTORY.md, topic files, journals and tracker files are
read, changed and written back whole (a temporary file, then a rename: :mod:`atomic_files`).
Two writers doing that at once lose one change, so each takes the file's lock first, through
a :class:`FileLocks` given to it by whoever built the stores (``framework/stores.py``):

- :class:`LocalFileLocks` (no database, the embedded default): ``<file>.lock`` held with
  ``filelock``. It excludes the processes of one machine; it is not trusted across machines
  (``flock`` over NFS may be emulated, local-only or missing).
- ``DatabaseFileLocks`` (``framework/database/file_locks.py``, when a database is configured):
  a PostgreSQL advisory lock named by the file's path inside the data folder, so replicas that
  mount the folder at different paths still take the same lock. No ``.lock`` file is made.

A lock is held for one read-modify-write of one file and never nested: no caller holds two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

from filelock import FileLock, Timeout

from framework.errors import StorageError

__all__ = ["LOCK_TIMEOUT", "FileLocks", "LocalFileLocks"]

LOCK_TIMEOUT = 60.0
"""Seconds a writer waits for a file's lock; a write takes milliseconds, so this means the
holder is stuck, and the wait ends in a :class:`StorageError` naming the file."""


class FileLocks(Protocol):
    """Who excludes the other writers of a file while one reads, changes and replaces it."""

    def hold(self, path: Path) -> AbstractContextManager[None]:
        """Hold ``path``'s lock for the block (every writer of ``path`` takes the same one)."""
        ...

    def close(self) -> None:
        """Let go of what the locks keep open (connections); holding again reopens it."""
        ...


class LocalFileLocks:
    """``<file>.lock`` (``filelock``) for each file: processes on one machine exclude each other.

    ``elsewhere``: the database the data folder's stores were moved to, if any (its record,
    read at each hold). Replicas on that database lock there, so a writer here would not
    exclude them: it is refused, as every other store of such a folder is without the
    database."""

    def __init__(
        self,
        *,
        timeout: float = LOCK_TIMEOUT,
        elsewhere: Callable[[], str | None] | None = None,
        folder: Path | None = None,
    ) -> None:
        self.timeout = timeout
        self._elsewhere = elsewhere
        self._folder = folder

    @contextmanager
    def hold(self, path: Path) -> Iterator[None]:
        """Hold ``<path>.lock`` for the block (its folder is made when missing)."""
        if self._elsewhere is not None and (database := self._elsewhere()) is not None:
            raise StorageError(
                f"the data folder {self._folder or path.parent} keeps its stores in the database "
                f"{database}, and the writers of {path} take its lock there. Nothing was "
                "written. Give --database (or set $STAFFROOM_DATABASE_URL) to use it"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(f"{path}.lock", timeout=self.timeout, poll_interval=0.01)
            lock.acquire()
        except Timeout as exc:
            raise StorageError(f"{path} stayed locked for {self.timeout:.0f}s") from exc
        except OSError as exc:
            raise StorageError(f"cannot lock {path}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            lock.release()

    def close(self) -> None:
        """Nothing is kept open between holds."""
