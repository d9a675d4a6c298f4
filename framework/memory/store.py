"""Where memory lives on disk: MEMORY.md per (employee x user), HISTORY.md per session."""

from __future__ import annotations

from pathlib import Path

from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.names import check_name
from framework.sessions.keys import SessionKey
from framework.settings import Settings


class MemoryStore:
    """Builds the memory files of one data folder with the configured cap and titles."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.data_dir
        # The file objects hold no content (every read goes to disk), only their path and
        # lock; building them costs more than a turn's prompt, so each is built once.
        self._memories: dict[tuple[str, str], MemoryFile] = {}
        self._histories: dict[str, HistorySummary] = {}

    def memory_path(self, employee: str, user: str) -> Path:
        """``memory/{employee}/{user}/MEMORY.md``; both names are checked, so the path never
        leaves ``memory/`` (:class:`~framework.errors.InputError` otherwise)."""
        check_name(employee, field="employee")
        check_name(user, field="user")
        return self.root / "memory" / employee / user / "MEMORY.md"

    def memory(self, employee: str, user: str) -> MemoryFile:
        """The MEMORY.md of ``employee`` about ``user``."""
        key = (employee, user)
        if key not in self._memories:
            self._memories[key] = MemoryFile(
                self.memory_path(employee, user),
                cap=self.settings.memory_cap,
                titles=self.settings.memory_titles,
            )
        return self._memories[key]

    def history(self, key: SessionKey | str) -> HistorySummary:
        """The session's ``history/{channel}:{chat_id}/HISTORY.md``."""
        name = str(key)
        if name not in self._histories:
            self._histories[name] = HistorySummary(self.root / "history" / name / "HISTORY.md")
        return self._histories[name]
