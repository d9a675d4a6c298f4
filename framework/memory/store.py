"""Where memory lives on disk: MEMORY.md per (employee x user), HISTORY.md per session."""

from __future__ import annotations

from pathlib import Path

from framework.memory.history_summary import HistorySummary
from framework.memory.memory_file import MemoryFile
from framework.sessions.keys import SessionKey
from framework.settings import Settings


class MemoryStore:
    """Builds the memory files of one data folder with the configured cap and titles."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.data_dir

    def memory_path(self, employee: str, user: str) -> Path:
        """``memory/{employee}/{user}/MEMORY.md``."""
        return self.root / "memory" / employee / user / "MEMORY.md"

    def memory(self, employee: str, user: str) -> MemoryFile:
        """The MEMORY.md of ``employee`` about ``user``."""
        return MemoryFile(
            self.memory_path(employee, user),
            cap=self.settings.memory_cap,
            titles=self.settings.memory_titles,
        )

    def history(self, key: SessionKey | str) -> HistorySummary:
        """The session's ``history/{channel}:{chat_id}/HISTORY.md``."""
        return HistorySummary(self.root / "history" / str(key) / "HISTORY.md")
