"""HISTORY.md: a session's dated one-line summaries, oldest first.

Consolidation appends lines such as ``2026-05-30 用户咨询了部署方案，决定先灰度 10%。``; the
context builder shows the newest ones that fit a budget. People may edit the file by hand, so
reading is lenient: every non-empty line except the ``# HISTORY`` header is an entry, whatever
its shape.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from datetime import date, datetime
from pathlib import Path

from framework.atomic_files import replace_file
from framework.errors import StorageError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.memory.similarity import normalize

__all__ = ["HEADER", "HistorySummary"]

HEADER = "# HISTORY"
_TMP_PREFIX = ".history-tmp-"
_MARKER = "<!-- batch "


class HistorySummary:
    """One session's HISTORY.md. Writers in several processes serialise on its lock
    (``locks``; default: ``<path>.lock``)."""

    def __init__(self, path: Path, *, locks: FileLocks | None = None) -> None:
        self.path = Path(path)
        self._locks = locks or LocalFileLocks()

    def append(self, lines: Sequence[tuple[date, str]], *, batch_id: str | None = None) -> bool:
        """Append ``YYYY-MM-DD text`` lines in the given order, all or none.

        Each text is made single-line (line breaks become spaces) and stripped; empty ones are
        skipped. Creates missing folders and the ``# HISTORY`` header. The file is replaced
        atomically under the lock, so readers never see half an append. With ``batch_id`` the
        lines are tagged by a ``<!-- batch ... -->`` comment and a second append of the same
        batch (a consolidation redone after a crash) writes nothing and returns False. Raises
        ``StorageError`` if the file or its lock cannot be written.
        """
        entries = [entry for day, text in lines if (entry := _entry(day, text))]
        if not entries:
            return False
        marker = f"{_MARKER}{' '.join(batch_id.split())} -->" if batch_id else ""
        added = "".join(f"{entry}\n" for entry in [marker, *entries] if entry).encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._locks.hold(self.path):
                old = self.path.read_bytes() if self.path.exists() else b""
                if not old.strip():
                    old = f"{HEADER}\n".encode()
                elif not old.endswith(b"\n"):
                    old += b"\n"  # a hand edit without a final newline must not glue lines
                if marker and marker.encode() in old:
                    return False
                self._replace(old + added)
                return True
        except OSError as exc:
            raise StorageError(f"cannot append to {self.path}: {exc}") from exc

    def forget(self, needle: str) -> list[str]:
        """Remove every line containing ``needle`` (normalised); returns the removed lines.
        The one rewrite of a history (``staffroom forget``), atomic under the lock."""
        key = normalize(needle)
        if not key or not self.path.exists():
            return []
        try:
            with self._locks.hold(self.path):
                raw = self.path.read_text(encoding="utf-8")
                lines = raw.splitlines(keepends=True)
                gone = [ln for ln in lines if ln.strip() != HEADER and key in normalize(ln)]
                if gone:
                    self._replace("".join(ln for ln in lines if ln not in gone).encode("utf-8"))
                return [ln.strip() for ln in gone]
        except OSError as exc:
            raise StorageError(f"cannot rewrite {self.path}: {exc}") from exc

    def lines(self) -> list[str]:
        """Every entry, oldest first: the non-empty lines, stripped, without header or tags."""
        return _entries(self._read_tail(None))

    def _read_tail(self, limit: int | None) -> str:
        """The file's text, or only its last ``limit`` bytes (from a line start) if given."""
        try:
            with self.path.open("rb") as fh:
                size = fh.seek(0, os.SEEK_END)
                start = 0 if limit is None else max(0, size - limit)
                fh.seek(start)
                data = fh.read()
        except FileNotFoundError:
            return ""
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from exc
        if start:
            data = data[data.find(b"\n") + 1 :]  # drop the partial first line
        return data.decode("utf-8", errors="replace")

    def recent(self, budget_chars: int) -> str:
        """The newest entries that fit in ``budget_chars``, newest first, one per line.

        Stops at the first entry that does not fit, so what is shown is an unbroken recent
        stretch. Only the newest entry is ever cut (ending in "…"), when it alone is too long.
        Returns ``""`` when there is nothing or the budget is below 1.
        """
        if budget_chars < 1:
            return ""
        picked: list[str] = []
        used = 0
        # Read only the end of the file (4 bytes per character at most): the cost follows the
        # budget, not how long the session has run.
        for line in reversed(_entries(self._read_tail(budget_chars * 4 + 1024))):
            cost = len(line) + (1 if picked else 0)  # the newline joining it to the previous
            if used + cost > budget_chars:
                if not picked:
                    picked.append(line[: budget_chars - 1] + "…")
                break
            picked.append(line)
            used += cost
        return "\n".join(picked)

    def _replace(self, data: bytes) -> None:
        # Called under the lock: a temp file here is a killed writer's, never a live one's.
        replace_file(self.path, data, prefix=_TMP_PREFIX, clear_stale=True)  # 0644: for people


_LEADING_DATE = re.compile(r"^(?:\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?[\s:：,，-]*)+")


def _entry(day: date, text: str) -> str:
    if isinstance(day, datetime):
        day = day.date()  # a timestamp would break the one-date-per-line shape
    one_line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    # A summariser (a model, or the extractive one) may date its lines itself: one date only.
    one_line = _LEADING_DATE.sub("", one_line)
    return f"{day.isoformat()} {one_line}" if one_line else ""


def _entries(raw: str) -> list[str]:
    return [
        text
        for line in raw.splitlines()
        if (text := line.strip()) and text != HEADER and not text.startswith("<!--")
    ]
