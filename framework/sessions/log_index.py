"""What a session log has read of its file: the ids in it, up to which byte, and its epochs.

``JsonlLog`` builds on :class:`LogIndex`: under the lock an append reads only what other
writers added since the last look (``_read_new``), moves an unfinished last line aside
(``<path>.torn``), and writes whole lines at the end (``_write``). The index is what makes an
append skip an id already written (``id_index.py``) and, in a log written under room leases,
refuse a writer whose lease a newer epoch has superseded (``log_fence.py``).
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from framework.errors import LeaseLostError, StorageError
from framework.sessions.events import utc_now
from framework.sessions.id_index import fenced_keys

__all__ = ["LogIndex"]

_INDEX_CHUNK = 1024 * 1024  # the index's read step


class LogIndex:
    """The id index of one log file (the base of ``JsonlLog``; the caller holds its locks)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        # The raw JSON text (as to_json writes it) of the ids of the non-stale lines in the
        # first _indexed bytes.
        self._ids: set[bytes] = set()
        self._indexed = 0  # always a line boundary
        self._top = 0  # the highest epoch in the first _indexed bytes
        self._rises: list[tuple[int, int]] = []  # (line offset, epoch) where _top went up

    def _reset_index(self) -> None:
        self._ids.clear()
        self._rises.clear()
        self._indexed = self._top = 0

    def _refusal(self, epoch: int) -> StorageError | None:
        """Why a writer of ``epoch`` must not append (the index caught up, lock held)."""
        if self._top <= epoch:
            return None
        if epoch:
            return LeaseLostError(
                f"session log {self.path} holds lines of lease epoch {self._top}, newer than "
                f"this writer's {epoch}: another replica took the room over; nothing was written"
            )
        return StorageError(
            f"session log {self.path} is written under room leases (epoch {self._top}): every "
            "reader would drop an unfenced line, so nothing was written; append through the "
            "replica that holds the room's lease (JsonlLog.fence)"
        )

    def _write(self, fd: int, data: bytes, epoch: int = 0) -> None:
        """Write whole lines (of ``epoch``) at the end; on failure cut the file back so no
        torn line stays."""
        try:
            done = os.write(fd, data)
            while done < len(data):  # a regular file writes short only on a full disk
                done += os.write(fd, data[done:])
        except OSError as exc:
            with suppress(OSError):  # if even this fails, the next append quarantines it
                os.ftruncate(fd, self._indexed)
            raise StorageError(f"cannot append to session log {self.path}: {exc}") from exc
        if epoch > self._top:
            self._top = epoch
            self._rises.append((self._indexed, epoch))
        self._indexed += len(data)

    def _read_new(self, fd: int, size: int, *, repair: bool = True) -> list[bytes]:
        """Index the complete lines in ``[_indexed, size)``; return their ids.

        With ``repair`` (lock held) an unfinished last line is quarantined and cut off;
        without, it is left for later.
        """
        if size < self._indexed:  # shrunk behind our back (a hand edit): start over
            self._reset_index()
        keys: list[bytes] = []
        want = _INDEX_CHUNK
        while self._indexed < size:
            start = self._indexed
            count = min(size - start, want)
            # Read from the newline before ``start`` so the regex sees every line start.
            block = os.pread(fd, count + 1, start - 1) if start else b"\n" + os.pread(fd, count, 0)
            if block[:1] != b"\n":  # rewritten in place behind our back: start over
                self._reset_index()
                continue
            at_eof = len(block) <= count or start + count >= size
            end = block.rfind(b"\n") + 1  # block[i] is at file offset start - 1 + i
            if end == 1 and not at_eof:
                want *= 2  # a single line longer than the chunk: read more at once
                continue
            if end < len(block) and at_eof and repair:
                self._quarantine(fd, start - 1 + end, block[end:])
            self._indexed = start - 1 + end
            found, self._top = fenced_keys(block, end, start - 1, self._top, self._rises)
            keys += found
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
