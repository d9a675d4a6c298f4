"""The memory files of one data folder: MEMORY.md per (employee x user), HISTORY.md per session.

Where they live is :class:`~framework.data_folder.DataFolder`'s to say (it also checks the
names, so no path leaves ``memory/``); this module builds the file objects with the settings
and the locks their writers take (:mod:`framework.file_locks`, given by whoever built it).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from framework.atomic_files import replace_file
from framework.data_folder import DataFolder
from framework.errors import InputError, StorageError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.memory.entries import SECTION_IDS
from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.phrases import Language
from framework.sessions.keys import SessionKey
from framework.settings import Settings


def _unknown(_employee: str) -> Language | None:
    return None


class MemoryStore:
    """Builds the memory files of one data folder with the configured cap and titles."""

    def __init__(
        self,
        settings: Settings,
        *,
        language_of: Callable[[str], Language | None] | None = None,
        locks: FileLocks | None = None,
    ) -> None:
        self.settings = settings
        self.locks = locks or LocalFileLocks()
        """How the writers of one file exclude each other (``<file>.lock`` without a database)."""
        self.language_of = language_of or _unknown
        """Employee id -> its language (the card's, else its persona's), which a new MEMORY.md's
        titles follow; None (an unknown employee): the first entry's language."""
        self.root = settings.data_dir
        self.folder = DataFolder(settings.data_dir)
        # The file objects hold no content (every read goes to disk), only their path and
        # lock; building them costs more than a turn's prompt, so each is built once.
        self._memories: dict[tuple[str, str], MemoryFile] = {}
        self._histories: dict[str, HistorySummary] = {}

    def memory_path(self, employee: str, user: str) -> Path:
        """``memory/{employee}/{user}/MEMORY.md``; both names are checked, so the path never
        leaves ``memory/`` (:class:`~framework.errors.InputError` otherwise)."""
        return self.folder.memory_file(employee, user)

    def memory(self, employee: str, user: str) -> MemoryFile:
        """The MEMORY.md of ``employee`` about ``user``."""
        key = (employee, user)
        if key not in self._memories:
            self._memories[key] = MemoryFile(
                self.memory_path(employee, user),
                cap=self.settings.memory_cap,
                titles=self.settings.memory_titles,
                new_language=self.language_of(employee),
                locks=self.locks,
            )
        return self._memories[key]

    def shared_path(self, employee: str, user: str) -> Path:
        """``memory/{employee}/{user}/shared.json``: the sections the person lets rooms see."""
        return self.folder.shared_file(employee, user)

    def shared_sections(self, employee: str, user: str) -> set[str]:
        """Section ids of ``user``'s MEMORY.md that may appear in rooms with other people.

        Nothing by default: what an employee learns about a person stays between them until
        the person says otherwise (:meth:`share`). An unreadable file shares nothing.
        """
        path = self.shared_path(employee, user)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {s for s in data if s in SECTION_IDS} if isinstance(data, list) else set()

    def share(self, employee: str, user: str, sections: Iterable[str]) -> set[str]:
        """Let rooms with other people see ``sections`` (replacing the earlier choice)."""
        chosen = set(sections)
        unknown = sorted(chosen - set(SECTION_IDS))
        if unknown:
            raise InputError(
                f"unknown memory sections {unknown}",
                field="share",
                fix=f"choose from {', '.join(SECTION_IDS)}",
            )
        path = self.shared_path(employee, user)
        try:  # replaced whole: a reader on any replica sees the old choice or the new one
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, json.dumps(sorted(chosen)).encode(), prefix=f".{path.name}.")
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return chosen

    def history(self, key: SessionKey | str) -> HistorySummary:
        """The session's ``history/{channel}:{chat_id}/HISTORY.md``."""
        name = str(key)
        if name not in self._histories:
            self._histories[name] = HistorySummary(self.folder.history_file(name), locks=self.locks)
        return self._histories[name]
