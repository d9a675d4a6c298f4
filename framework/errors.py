"""Staffroom's exceptions, split by who must act.

::

    StaffroomError                 base of everything we raise on purpose
    ├── InputError                 a person must fix a file or an argument (file, line, field, fix)
    │   ├── ScenarioError          scenarios/*.yaml
    │   ├── CardError              agents/*.yaml (employee cards)
    │   ├── SopCardError           sop_library/**/*.md (SOP cards)
    │   ├── JsonlError             a broken line in a session's JSONL history
    │   └── UnknownNameError       an id that names nothing (employee, scenario, session)
    ├── WorkspaceEscapeError       a path that would leave the session workspace
    ├── StorageError               the data folder cannot be read or written
    │   ├── RebuildError           a room's log lacks what a rebuild needs (runtime/recovery.py)
    │   └── LeaseLostError         another replica took this room: the write was refused
    ├── MemoryCapExceeded          a MEMORY.md write would pass its cap (tells what to merge/drop)
    ├── RoomBusyError              another process is running this room right now
    ├── ModelError                 a chat model failed or is not allowed (e.g. network off)
    ├── EditError                  an SOP edit that cannot be applied (sop/edits.py)
    └── PromptTemplateError        a jinja2 prompt template failed to render

Errors a model can fix (a malformed tool call, an unknown tool, a path outside the workspace
during a tool call) are sent back to the model as tool results, not raised. The CLI prints
``InputError`` and friends without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class StaffroomError(Exception):
    """Base class for every error Staffroom raises on purpose."""


class InputError(StaffroomError):
    """Bad input that a person must fix: names the file, the line and field, and the fix."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        self.fix = fix
        super().__init__(self.render())

    @property
    def location(self) -> str:
        """``file:line`` (or as much of it as is known)."""
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line is not None else self.file

    def render(self) -> str:
        """One readable line (two with the fix): ``file:line field: message``."""
        head = " ".join(part for part in (self.location, self.field) if part)
        text = f"{head}: {self.message}" if head else self.message
        if self.fix:
            text += f"\n  fix: {self.fix}"
        return text


class ScenarioError(InputError):
    """A scenario YAML file is malformed or refers to something that does not exist."""


class CardError(InputError):
    """An employee card (agents/*.yaml) is malformed."""


class SopCardError(InputError):
    """An SOP card (markdown with YAML front matter) is malformed."""


class JsonlError(InputError):
    """A line of a session's JSONL history cannot be read as an event."""


class UnknownNameError(InputError):
    """An id names no employee, scenario or session."""


class WorkspaceEscapeError(StaffroomError):
    """A path would leave the session workspace (``..``, absolute, or an escaping symlink)."""


class StorageError(StaffroomError):
    """The data folder cannot be read or written as needed."""


class LeaseLostError(StorageError):
    """This replica's lease on a room ran out or was taken by another replica (with a higher
    fencing epoch): its write was refused, and nothing of it was stored."""


class MemoryCapExceeded(StaffroomError):
    """A MEMORY.md write would exceed its character cap; the message says what to merge or drop.

    The memory tool turns it into a failed tool result, so the model can fix it itself.
    """


class RoomBusyError(StaffroomError):
    """Another process holds this room's run lock."""


class RoomLeasedError(RoomBusyError):
    """Another live replica holds this room's lease (on a database): a queued message that
    waited for the room goes back to the shared queue, it is not dropped."""


class ModelError(StaffroomError):
    """A chat model could not be built or called."""


class PromptTemplateError(StaffroomError):
    """A jinja2 prompt template failed to render (names the template and the variable)."""
