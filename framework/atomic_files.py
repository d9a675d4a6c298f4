"""Replace a file atomically: a reader sees the old file or the new one, never half of either.

The bytes go to a temporary file in the target's own folder (the same file system, so
``os.replace`` is a rename), then take the target's name. Workspace files, MEMORY.md and its
``facts.json``, HISTORY.md, the knowledge files and the data folder's store record are all
written this way.
"""

from __future__ import annotations

import os
import tempfile
from glob import escape as glob_escape
from pathlib import Path

__all__ = ["replace_file"]


def replace_file(
    path: Path,
    data: bytes,
    *,
    prefix: str,
    mode: int | None = 0o644,
    sync: bool = True,
    clear_stale: bool = False,
) -> None:
    """Replace ``path`` with ``data`` through a temporary file named ``<prefix>…`` beside it.

    ``mode``: the new file's permissions (None keeps ``mkstemp``'s 0600). ``sync``: ``fsync``
    before the rename, so a crash cannot leave an empty file behind it. ``clear_stale``: first
    delete leftover temporary files with ``prefix``; only for a caller holding the file's lock,
    under which such a file is a killed writer's, never a live one's. The folder must exist.
    """
    if clear_stale:
        for stale in path.parent.glob(f"{glob_escape(prefix)}*"):
            stale.unlink(missing_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
