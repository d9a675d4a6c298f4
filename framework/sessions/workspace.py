"""A session's workspace: the folder whose files employees read and write through tools.

Every path comes from a model or a person, so each one is checked: it must be relative, must
not use ``..``, and must still be inside the root once symlinks are resolved.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from framework.atomic_files import replace_file
from framework.errors import WorkspaceEscapeError

__all__ = ["Workspace"]

_TMP_PREFIX = ".staffroom-tmp-"


class Workspace:
    """Files shared by everyone in one session (one folder per Room or DM).

    The root folder is created on the first write, so merely opening a session leaves no trace.
    Checks happen at call time; a symlink swapped in between check and use by another local
    process is out of scope (the workspace guards against model mistakes, not local users).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` inside the root; raise ``WorkspaceEscapeError`` otherwise.

        Refuses absolute paths, any ``..`` part, and symlinks that lead outside the root.
        A symlink whose target stays inside is followed.
        """
        if "\x00" in rel:
            raise self._escape(rel, "contains a NUL byte", "remove the NUL character")
        posix, windows = PurePosixPath(rel), PureWindowsPath(rel)
        if posix.is_absolute() or windows.is_absolute() or windows.drive or rel.startswith("\\"):
            raise self._escape(rel, "is absolute", "use a path relative to the workspace")
        if ".." in posix.parts or ".." in windows.parts:
            raise self._escape(rel, "uses '..'", "use a path inside the workspace without '..'")
        root = self.root.resolve()
        # resolve() follows every symlink that exists along the way, so a link anywhere in
        # the path that points outside shows up as a result outside the root.
        target = (root / posix).resolve()
        if not target.is_relative_to(root):
            raise self._escape(
                rel,
                f"is a symlink (or goes through one) that leads outside, to {target}",
                "use a path to a real file inside the workspace",
            )
        return target

    def write_text(self, rel: str, text: str) -> Path:
        """Write ``text`` (UTF-8) atomically: temp file in the same folder, then ``os.replace``.

        Creates missing parent folders. Returns the written path.
        """
        target = self.resolve(rel)
        if target == self.root.resolve():
            raise self._escape(rel, "is the workspace folder itself", "name a file inside it")
        target.parent.mkdir(parents=True, exist_ok=True)
        # 0644, synced: workspace files are ordinary files, and a crash leaves no empty one.
        replace_file(target, text.encode("utf-8"), prefix=_TMP_PREFIX)
        return target

    def read_text(self, rel: str, offset: int = 0, limit: int | None = None) -> str:
        """Read a UTF-8 text file; ``offset``/``limit`` count characters, not bytes.

        Undecodable bytes become U+FFFD so a stray binary file cannot crash a tool call.
        """
        if offset < 0 or (limit is not None and limit < 0):
            raise ValueError("offset and limit must be >= 0")
        target = self.resolve(rel)
        if not target.is_file():
            raise FileNotFoundError(
                f"no file {rel!r} in the workspace; list the files to see what exists"
            )
        text = target.read_text(encoding="utf-8", errors="replace")
        end = None if limit is None else offset + limit
        return text[offset:end]

    def list_files(self) -> list[str]:
        """Relative POSIX paths of all files, sorted; escaping symlinks and temp files omitted."""
        root = self.root.resolve()
        if not root.is_dir():
            return []
        found: list[str] = []
        for folder, _dirs, files in os.walk(root):
            for name in files:
                if name.startswith(_TMP_PREFIX):
                    continue
                path = Path(folder) / name
                real = path.resolve()
                if real.is_relative_to(root) and real.is_file():
                    found.append(path.relative_to(root).as_posix())
        return sorted(found)

    def _escape(self, rel: str, problem: str, fix: str) -> WorkspaceEscapeError:
        return WorkspaceEscapeError(
            f"path {rel!r} {problem}; the workspace is {self.root}. Fix: {fix}."
        )
