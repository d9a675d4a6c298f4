"""The project files a scheduler runs by, re-read when they change, the last good kept.

A person edits ``schedules.yaml`` and ``staffroom.yaml`` while a server runs: the next tick
reads the new version; a broken edit keeps the last good one in force (not "no schedules",
not a dead scheduler) and its error is what the scheduler's status reports.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from framework.errors import InputError
from framework.specs.project_file import PROJECT_FILE, ProjectFile, load_project_file
from framework.specs.schedules_file import SCHEDULES_FILE, SchedulesFile, load_schedules

__all__ = ["ProjectFiles", "Watched"]

T = TypeVar("T")


class Watched(Generic[T]):
    """One file: its last good reading, and the error of the current version, if any."""

    def __init__(self, path: Path, load: Callable[[], T], empty: T) -> None:
        self.path, self._load = path, load
        self.value: T = empty
        self.error: str | None = None
        self._stamp: tuple[int, int] | bool | None = False  # False: never read

    def get(self) -> T:
        """The file's content as last read well (read again when it changed on disk)."""
        try:
            stat = self.path.stat()
            stamp: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            try:
                self.value, self.error = self._load(), None
            except InputError as exc:  # the last good one stays in force
                self.error = str(exc)
            self._stamp = stamp
        return self.value


class ProjectFiles:
    """``schedules.yaml`` and ``staffroom.yaml`` of a project, watched."""

    def __init__(self, project: Path) -> None:
        self.schedules = Watched(
            project / SCHEDULES_FILE, lambda: load_schedules(project), SchedulesFile()
        )
        self.project = Watched(
            project / PROJECT_FILE, lambda: load_project_file(project), ProjectFile()
        )

    @property
    def error(self) -> str | None:
        """The error of the first file whose current version does not load."""
        return self.schedules.error or self.project.error
