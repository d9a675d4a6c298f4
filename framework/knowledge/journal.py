"""Layer 1, journals: each employee's raw notes, one markdown file per day, append-only.

``journals/{employee}/{YYYY-MM-DD}.md`` gets one block per session end::

    # Journal: pm, 2026-05-30

    ## 14:05 dm:alice@pm (entry end-dm:alice@pm-42)
    - note: 提纲已交给 alice
    - observation: 审核环节是瓶颈，工单积压在草稿状态
      第二行接在上一条后面（两个空格缩进）
    - question: 要不要先灰度 10%？

A journal is input to extraction and reflection, never memory itself: nothing here is read
into prompts. Blocks are only ever appended (what is in the file, hand edits included, is
kept as written) and files are never deleted. ``entry_id`` makes an append idempotent: a
session end re-run after a crash finds its id in the file and adds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Literal, get_args

from framework.errors import InputError, StorageError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.knowledge.files import read_utf8, write_atomic
from framework.memory.similarity import normalize
from framework.names import check_name

__all__ = [
    "ENTRY_KINDS",
    "EntryKind",
    "Journal",
    "JournalBlock",
    "JournalDay",
    "JournalEntry",
]

EntryKind = Literal["note", "observation", "question"]
ENTRY_KINDS: tuple[EntryKind, ...] = get_args(EntryKind)

_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.md$")
_HEADING = re.compile(r"^## (\d{1,2}:\d{2}) (\S+) \(entry ([^\s()]+)\)\s*$")
_ENTRY = re.compile(r"^- (\w+): ?(.*)$")
_TOKEN = re.compile(r"^[^\s()]{1,200}$")
_HEADING_FIX = "write block headings as `## HH:MM <session> (entry <id>)`, e.g. " + (
    "`## 14:05 dm:alice@pm (entry e-1)`"
)
_ENTRY_FIX = "start each entry with `- note: `, `- observation: ` or `- question: `; " + (
    "indent its further lines by two spaces"
)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One typed line of a journal block: a note, an observation or an open question."""

    kind: EntryKind
    text: str


@dataclass(frozen=True, slots=True)
class JournalBlock:
    """What one session end wrote: its time, session key, id and entries."""

    time: str
    """``HH:MM`` as written in the heading."""
    session: str
    entry_id: str
    entries: tuple[JournalEntry, ...]
    line: int
    """Line of the heading in the file (for errors and people)."""


@dataclass(frozen=True, slots=True)
class JournalDay:
    """One employee's journal for one day (no blocks when there is no file)."""

    employee: str
    day: date
    path: Path
    blocks: tuple[JournalBlock, ...]

    @property
    def entries(self) -> list[JournalEntry]:
        """Every entry of the day, in file order."""
        return [entry for block in self.blocks for entry in block.entries]


class Journal:
    """Every employee's journals under ``root`` (the data folder's ``journals/``).

    All methods do blocking file I/O: call them from a worker thread in async code. ``locks``:
    how the writers of a day's file exclude each other (default: ``<file>.lock``).
    """

    def __init__(self, root: Path, *, locks: FileLocks | None = None) -> None:
        self.root = Path(root)
        self._locks = locks or LocalFileLocks()

    def path(self, employee: str, day: date) -> Path:
        """``{root}/{employee}/{YYYY-MM-DD}.md`` (the name is checked: it stays under root)."""
        return self.root / check_name(employee, field="employee") / f"{_day(day).isoformat()}.md"

    def append(
        self,
        employee: str,
        day: date,
        session: str,
        entries: Sequence[JournalEntry],
        *,
        entry_id: str,
        at: time | None = None,
    ) -> bool:
        """Append one block for a session end; False when ``entry_id`` is already in the file.

        ``day`` should come from the session's own data (its end event), not the clock, so a
        re-run after a crash looks in the same file. ``at`` is the heading's time (default:
        now, local time). Entries with empty text are skipped; with none left nothing is
        written. A broken file is an :class:`InputError` and is not touched.
        """
        session = _token(session, "session")
        entry_id = _token(entry_id, "entry_id")
        kept = [_checked(entry) for entry in entries if entry.text.strip()]
        if not kept:
            return False
        path = self.path(employee, day)
        stamp = (at or datetime.now().time()).strftime("%H:%M")
        with self._locks.hold(path):
            old = read_utf8(path)
            if old is not None and any(
                b.entry_id == entry_id for b in _parse(old, path, employee, day).blocks
            ):
                return False
            head = old if old and old.strip() else f"# Journal: {employee}, {_day(day)}\n"
            if not head.endswith("\n"):
                head += "\n"  # a hand edit without a final newline must not glue lines
            block = [f"## {stamp} {session} (entry {entry_id})", *map(_render, kept)]
            write_atomic(path, head + "\n" + "\n".join(block) + "\n")
        return True

    def forget(self, needle: str, employee: str | None = None) -> list[tuple[Path, str]]:
        """Remove every entry (with its continuation lines) containing ``needle``
        (normalised), in every journal or ``employee``'s: the one exception to append-only,
        for ``staffroom forget``. The rest of each file is kept byte for byte. Returns
        ``(file, removed entry)`` pairs."""
        key = normalize(needle)
        if not key or not self.root.is_dir():
            return []
        folders = (
            [self.root / check_name(employee, field="employee")]
            if employee
            else [p for p in sorted(self.root.iterdir()) if p.is_dir()]
        )
        removed: list[tuple[Path, str]] = []
        for path in (f for folder in folders for f in sorted(folder.glob("*.md"))):
            with self._locks.hold(path):
                text = read_utf8(path)
                if text is None or key not in normalize(text):
                    continue
                kept, gone = _without(text.splitlines(keepends=True), key)
                if gone:
                    write_atomic(path, "".join(kept))
                    removed += [(path, g) for g in gone]
        return removed

    def read(self, employee: str, day: date) -> JournalDay:
        """The day's journal; empty when there is none. A broken file is an InputError."""
        path = self.path(employee, day)
        text = read_utf8(path)
        if text is None:
            return JournalDay(employee, _day(day), path, ())
        return _parse(text, path, employee, day)

    def days(self, employee: str) -> list[date]:
        """Days with a journal file, oldest first (other files in the folder are ignored)."""
        folder = self.root / check_name(employee, field="employee")
        found: list[date] = []
        try:
            names = [p.name for p in folder.iterdir() if p.is_file()]
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StorageError(f"cannot list {folder}: {exc.strerror or exc}") from exc
        for name in names:
            match = _DAY_FILE.match(name)
            if match:
                try:
                    found.append(date.fromisoformat(match.group(1)))
                except ValueError:
                    continue  # 2026-13-40.md is not a day; someone's own file
        return sorted(found)

    def entries_since(self, employee: str, day: date) -> list[JournalDay]:
        """Journals of ``day`` and every later day, oldest first (for extraction, reflection)."""
        return [self.read(employee, d) for d in self.days(employee) if d >= _day(day)]


def _without(lines: list[str], key: str) -> tuple[list[str], list[str]]:
    """``lines`` without the entries (``- `` line + indented continuations) matching ``key``."""
    kept: list[str] = []
    gone: list[str] = []
    group: list[str] = []

    def flush() -> None:
        text = "".join(group)
        if group and key in normalize(text):
            gone.append(" ".join(part.strip() for part in group))
        else:
            kept.extend(group)
        group.clear()

    for line in lines:
        if line.startswith("- "):
            flush()
            group.append(line)
        elif group and line.startswith((" ", "\t")) and line.strip():
            group.append(line)
        else:
            flush()
            kept.append(line)
    flush()
    return kept, gone


def _day(value: date) -> date:
    # A datetime is a date too; its time would not belong in a file name.
    return value.date() if isinstance(value, datetime) else value


def _token(value: str, field: str) -> str:
    if not isinstance(value, str) or not _TOKEN.match(value):
        raise InputError(
            f"invalid {field} {value!r}",
            field=field,
            fix="use 1-200 characters without spaces or parentheses",
        )
    return value


def _checked(entry: JournalEntry) -> JournalEntry:
    if entry.kind not in ENTRY_KINDS:
        raise InputError(
            f"unknown journal entry kind {entry.kind!r}",
            field="kind",
            fix=f"use one of: {', '.join(ENTRY_KINDS)}",
        )
    return entry


def _render(entry: JournalEntry) -> str:
    # Blank lines inside an entry would end it when read back, so they are dropped.
    lines = [line.rstrip() for line in entry.text.strip().splitlines() if line.strip()]
    return "\n".join([f"- {entry.kind}: {lines[0]}", *(f"  {line}" for line in lines[1:])])


def _parse(text: str, path: Path, employee: str, day: date) -> JournalDay:
    blocks: list[JournalBlock] = []
    current: tuple[str, str, str, int] | None = None
    entries: list[JournalEntry] = []

    def close() -> None:
        if current is not None:
            blocks.append(JournalBlock(*current[:3], tuple(entries), current[3]))

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line.strip():
            continue
        if line.startswith("## "):
            heading = _HEADING.match(line)
            if heading is None:
                raise InputError(
                    "a block heading this file cannot read",
                    file=path,
                    line=number,
                    field="heading",
                    fix=_HEADING_FIX,
                )
            close()
            current = (heading.group(1), heading.group(2), heading.group(3), number)
            entries = []
            if any(b.entry_id == current[2] for b in blocks):
                raise InputError(
                    f"entry id {current[2]!r} appears twice",
                    file=path,
                    line=number,
                    field="heading",
                    fix="give each block its own id (ids make appends idempotent)",
                )
        elif current is None:
            if not line.startswith("# "):  # the title; anything else has no block to go in
                raise InputError(
                    "text before the first block heading",
                    file=path,
                    line=number,
                    fix=f"put it under a block heading ({_HEADING_FIX})",
                )
        elif raw.startswith((" ", "\t")) and entries:
            last = entries[-1]
            entries[-1] = JournalEntry(last.kind, f"{last.text}\n{line.strip()}")
        else:
            entry = _ENTRY.match(line)
            if entry is None or entry.group(1) not in ENTRY_KINDS:
                raise InputError(
                    "a line this file cannot read as an entry",
                    file=path,
                    line=number,
                    field="entry",
                    fix=_ENTRY_FIX,
                )
            kind = next(k for k in ENTRY_KINDS if k == entry.group(1))
            entries.append(JournalEntry(kind, entry.group(2).strip()))
    close()
    return JournalDay(employee, _day(day), path, tuple(blocks))
