"""Read-only and writable data folders: what each command may open, and a clear error when not.

Commands that only read (``sop list/show/...``, ``replay``) work on a data folder mounted
read-only or owned by someone else: they open ``sops.sqlite`` with SQLite's ``mode=ro`` and
import nothing. Commands that write (``run``, ``dm``, ``sop approve``, ...) refuse such a
folder up front with one sentence saying so, instead of SQLite's "unable to open database
file" dressed as damage (whose fix, moving the store aside, would lose it).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import aiosqlite

from framework.data_folder import CHECKPOINTS, SOPS, DataFolder
from framework.errors import StorageError
from framework.settings import Settings
from framework.sop.service import SopService
from framework.sop.store import SopStore


def is_writable(data_dir: Path) -> bool:
    """True when this process may create and change the folder's files.

    ``os.access`` answers for the file system too (a read-only mount is ``EROFS``), and for
    a folder that does not exist yet it asks the nearest parent that does.
    """
    existing = data_dir
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not os.access(existing, os.W_OK | os.X_OK):
        return False
    stores = (data_dir / CHECKPOINTS, data_dir / SOPS)
    return all(os.access(path, os.W_OK) for path in stores if path.exists())


def require_writable(data_dir: Path, command: str) -> None:
    """:class:`StorageError` naming ``command`` when it would have to write to a read-only
    folder (checked before anything opens, so nothing is left half-done)."""
    if not is_writable(data_dir):
        raise StorageError(
            f"the data folder {data_dir} is read-only for this user, and `staffroom {command}` "
            "writes to it. Nothing was opened. Make it "
            f"writable, or work on a copy: cp -r {data_dir} COPY && staffroom {command} ... "
            "--data-dir COPY (read-only commands such as `sop list` and `history` work as is)"
        )


async def open_sops(settings: Settings, *, writes: bool, command: str) -> SopService:
    """The SOP service for a ``sop`` command.

    Writable folder: :meth:`SopService.open` (cards in ``sop_library/`` are imported first,
    as always). Read-only folder: a command that only reads gets the stored versions through
    a read-only connection; one that ``writes`` is refused.
    """
    path = settings.data_dir / SOPS
    if is_writable(settings.data_dir):
        try:
            settings.data_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot create the data folder {settings.data_dir}: {exc}") from exc
        return await SopService.open(path, settings.project_dir / "sop_library")
    if writes:
        require_writable(settings.data_dir, command)
    return SopService(await open_read_only(path))


async def open_read_only(path: Path) -> SopStore:
    """``sops.sqlite`` through a read-only connection: no schema set-up, no import.

    SQLite's ``mode=ro`` still needs the WAL index (``-shm``) file, which a read-only folder
    cannot create once the last writer removed it; ``immutable=1`` then reads the file as it
    is (no other process can be writing to a folder no one may write to).
    """
    DataFolder(path.parent).check_stores(path.name)  # lost, not new: say so as elsewhere
    if not path.is_file():
        raise StorageError(
            f"there is no SOP store at {path} and the data folder is read-only, so none can be "
            "made: nothing to show (run a command in a writable data folder first)"
        )
    uri = path.resolve().as_uri()
    problem: sqlite3.Error | None = None
    for options in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = await aiosqlite.connect(f"{uri}?{options}", uri=True)
        except sqlite3.Error as exc:
            problem = exc
            continue
        try:
            await conn.execute("SELECT count(*) FROM sqlite_master")  # the file opens here
        except sqlite3.Error as exc:
            problem = exc
            await conn.close()  # else its worker thread keeps the process alive
            continue
        return SopStore(conn, path)
    raise StorageError(f"cannot read the SOP store {path} (read-only folder): {problem}")
