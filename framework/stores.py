"""One data folder's stores, each opened on first use: the one object that holds them.

A :class:`~framework.staffroom.Staffroom` holds a :class:`Stores` (its ``stores``) and adds the
project, the models and the rooms. The reading and admin commands (``staffroom sop ...``,
``history``, ``replay``, ``memory``, ``knowledge ...``) open a :class:`Stores` alone with
:meth:`Stores.open`: they need no catalog, no model and no checkpointer. (``memory`` reads
the project's employee cards only to tell an unknown employee from one with no memory yet.)

Read-only folders: what only reads works on a data folder mounted read-only or owned by
someone else (``sops.sqlite`` opens with SQLite's ``mode=ro``, nothing is imported). What
writes refuses such a folder up front with one sentence saying so, instead of SQLite's
"unable to open database file" dressed as damage (whose fix, moving the store aside, would
lose it).
"""

from __future__ import annotations

import asyncio
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import aiosqlite

from framework.data_folder import CHECKPOINTS, SOPS, DataFolder
from framework.database.url import redact
from framework.errors import StorageError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.knowledge.base import KnowledgeBase
from framework.memory.store import MemoryStore
from framework.names import check_name
from framework.phrases import Language
from framework.sessions.store import SessionStore
from framework.settings import Settings
from framework.sop.service import SopService
from framework.sop.store import SopStore
from framework.specs.catalog import Catalog
from framework.specs.knowledge_file import KNOWLEDGE_FILE, KnowledgeConfig, load_knowledge_file
from framework.specs.project import AGENTS
from framework.specs.project import SOPS as SOP_LIBRARY
from framework.sqlite_stores import connect_store

if TYPE_CHECKING:  # langgraph is imported when checkpoints are opened: reading commands skip it
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from framework.database.leases import Leases
    from framework.database.pool import Database

__all__ = ["ClosedOnExit", "Stores", "require_writable", "settings_for"]


class ClosedOnExit(ABC):
    """A handle on open stores that ``async with`` closes on the way out (whatever happened)."""

    @abstractmethod
    async def close(self) -> None:
        """Close what the handle holds open."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


class Stores(ClosedOnExit):
    """The stores of one data folder. Open alone with :meth:`open` (what the reading and
    admin commands use), or get a :class:`Staffroom`'s as ``staff.stores``; close with
    :meth:`close` (or ``async with``)."""

    def __init__(
        self,
        settings: Settings,
        *,
        writable: bool,
        knowledge: KnowledgeConfig | None = None,
        language_of: Callable[[str], Language | None] | None = None,
        owner: str | None = None,
    ) -> None:
        """Hold the folder's stores (nothing is opened yet); use :meth:`open`.

        ``knowledge``: the project's ``knowledge.yaml``, loaded already (None: loaded on
        first use); ``language_of``: an employee's language, which a new MEMORY.md's titles
        follow (see :class:`MemoryStore`); ``owner``: the name this process takes rooms'
        leases under on a database (None: a replica's, ``host:pid:random``)."""
        self.settings = settings
        self.folder = DataFolder(settings.data_dir)
        """Where everything in the data folder lives."""
        self.writable = writable
        """Whether this process may change the folder (checked when it was opened)."""
        self.sessions = SessionStore(
            settings.data_dir, durability=settings.durability, lock=settings.lock
        )
        """Session logs and workspaces (opened per session, on first use)."""
        self.file_locks = _file_locks(settings, self.folder)
        """How the writers of MEMORY.md, HISTORY.md and the knowledge files exclude each other."""
        self.memory = MemoryStore(settings, language_of=language_of, locks=self.file_locks)
        """MEMORY.md and HISTORY.md files (read from disk on every use)."""
        self._knowledge_config = knowledge
        self._sops: SopService | None = None
        self._knowledge: KnowledgeBase | None = None
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._checkpoint_conn: aiosqlite.Connection | None = None  # SQLite's, closed with us
        self._database: Database | None = None
        self._owner = owner
        self._leases: Leases | None = None

    @classmethod
    async def open(
        cls,
        data_dir: str | Path | None = None,
        *,
        settings: Settings | None = None,
        project_dir: str | Path | None = None,
        writes: bool = False,
        command: str = "",
    ) -> Self:
        """The stores of the data folder (``data_dir``, else ``settings.data_dir``); no
        catalog, model or checkpointer is loaded. With ``writes``, a read-only folder is
        refused first (:func:`require_writable`, naming ``command``), so nothing is left
        half-done."""
        settings = settings_for(data_dir, settings, project_dir)
        folder = DataFolder(settings.data_dir)
        if writes:
            require_writable(folder.root, command)
        return cls(settings, writable=folder.writable())

    async def sops(self, *, import_cards: bool = True) -> SopService:
        """The SOP library, opened on first use (the same service afterwards).

        Writable folder: the project's ``sop_library/`` cards are imported first unless
        ``import_cards`` is False (the store as it is, e.g. for a replay). Read-only folder:
        the stored versions through a read-only connection, nothing imported.
        """
        if self._sops is not None:
            return self._sops
        if self.writable or await self.database() is not None:
            try:
                self.folder.root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StorageError(
                    f"cannot create the data folder {self.folder.root}: {exc}"
                ) from exc
            library = self.settings.project_dir / SOP_LIBRARY if import_cards else None
            db = await self.database()
            if db is not None:  # the store every replica shares
                self._sops = await SopService.on_store(await SopStore.open_database(db), library)
            else:
                self._sops = await SopService.open(self.folder.sops, library)
        else:
            self._sops = SopService(await _read_only_store(self.folder))
        return self._sops

    async def database(self) -> Database | None:
        """The PostgreSQL pool this process shares among its stores (opened on first use),
        or None when no database is configured (SQLite files in the data folder)."""
        if self.settings.database is None:
            if (elsewhere := self.folder.database()) is not None:
                raise StorageError(
                    f"the data folder {self.folder.root} keeps its checkpoints and SOPs in the "
                    f"database {elsewhere}. Nothing was opened. Give --database (or set "
                    "$STAFFROOM_DATABASE_URL) to use it"
                )
            return None
        if self._database is None:
            from framework.database.pool import Database  # the `postgres` extra: only here

            self._database = await Database.open(
                self.settings.database, max_size=self.settings.database_pool_size, owner=self._owner
            )
            if self.writable:
                self.folder.record_database(redact(self.settings.database, user=False))
        return self._database

    async def leases(self) -> Leases | None:
        """The rooms' leases on the database (None without one: a file lock per room)."""
        db = await self.database()
        if db is None:
            return None
        if self._leases is None:
            from framework.database.leases import Leases

            self._leases = Leases(db, seconds=self.settings.lease_seconds)
        return self._leases

    async def checkpoints(self) -> BaseCheckpointSaver[Any]:
        """Where every room stands (LangGraph's checkpoints: in ``checkpoints.sqlite``, or
        fenced by the rooms' leases on the database), opened and set up on first use (the
        same saver afterwards); only running rooms need it."""
        if self._saver is not None:
            return self._saver
        db = await self.database()
        if db is not None:
            from framework.database.fenced_checkpoints import open_checkpoints

            self._saver = await open_checkpoints(db)
            return self._saver
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path = self.folder.checkpoints
        try:
            self.folder.root.mkdir(parents=True, exist_ok=True)
            conn = await connect_store(path)  # damage found later names the file
        except (OSError, aiosqlite.Error) as exc:
            raise StorageError(f"cannot open the data folder {self.folder.root}: {exc}") from exc
        try:
            await conn.execute("PRAGMA synchronous=NORMAL")
            saver = AsyncSqliteSaver(conn)
            await saver.setup()
        except aiosqlite.Error as exc:
            await conn.close()  # else aiosqlite's worker thread keeps the process alive
            raise StorageError(
                f"cannot use {path}: {exc}; restore it from a backup, or move it aside "
                "and rebuild every room from its log: staffroom doctor --repair"
            ) from exc
        except BaseException:
            await conn.close()
            raise
        self._saver, self._checkpoint_conn = saver, conn
        return saver

    async def open_for_rooms(self) -> tuple[BaseCheckpointSaver[Any], SopService]:
        """Open what running rooms needs now (the checkpoints, then the SOPs, the project's
        cards imported): a lost store is reported first, never silently recreated empty; on
        any failure everything opened is closed again."""
        self.folder.check_stores()
        try:
            saver = await self.checkpoints()
            sops = await self.sops()
        except BaseException:
            await self.close()  # else aiosqlite's worker threads keep the process alive
            raise
        if self.settings.database is None:  # else they live in the database, not the folder
            self.folder.record(CHECKPOINTS, SOPS)
        return saver, sops

    def employee(self, employee: str) -> str:
        """``employee`` once it names one: a card in the project's ``agents/``, or someone this
        folder holds memory of (an employee of another project, or one since removed). Else
        the catalog's error: unknown, with a did-you-mean, or its card's own."""
        check_name(employee, field="employee")
        if not (self.folder.memory_dir / employee).is_dir():
            Catalog.load(self.settings.project_dir / AGENTS, None, None).employee(employee)
        return employee

    def knowledge(self) -> KnowledgeBase:
        """The knowledge layers, configured by the project's ``knowledge.yaml`` (loaded on
        first use: a broken file is an :class:`~framework.errors.InputError` with its line)."""
        if self._knowledge is None:
            config = self._knowledge_config
            if config is None:
                config = load_knowledge_file(self.settings.project_dir / KNOWLEDGE_FILE)
            self._knowledge = KnowledgeBase(
                self.settings.data_dir,
                config,
                locks=self.file_locks,
                own_index=self.settings.database is not None,
            )
        return self._knowledge

    async def close(self) -> None:
        """Close every store opened through this object."""
        self.sessions.close()
        if self._knowledge is not None:
            await self._knowledge.close()
        await asyncio.to_thread(self.file_locks.close)  # joins the lock pool's threads, if any
        if self._sops is not None:
            await self._sops.close()
            self._sops = None
        if self._checkpoint_conn is not None:
            await self._checkpoint_conn.close()
            self._checkpoint_conn = None
        self._saver, self._leases = None, None
        if self._database is not None:  # last: the stores above may use it as they close
            await self._database.close()
            self._database = None


def _file_locks(settings: Settings, folder: DataFolder) -> FileLocks:
    """The locks around each file's read-modify-write: advisory locks on the database when one
    is configured (no correctness may rest on ``flock`` over a network folder), else
    ``<file>.lock`` (refused on a folder whose stores were moved to a database)."""
    if settings.database is None:
        return LocalFileLocks(elsewhere=folder.database, folder=folder.root)
    from framework.database.file_locks import DatabaseFileLocks  # the `postgres` extra: only here

    pool = max(1, min(4, settings.database_pool_size))
    return DatabaseFileLocks(settings.database, root=settings.data_dir, max_size=pool)


def settings_for(
    data_dir: str | Path | None, settings: Settings | None, project_dir: str | Path | None
) -> Settings:
    """``settings`` (default: from the environment) with ``data_dir`` and ``project_dir``
    when given: what ``Staffroom.open`` and :meth:`Stores.open` take."""
    settings = settings or Settings.from_env()
    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": Path(data_dir)})
    if project_dir is not None:
        settings = settings.model_copy(update={"project_dir": Path(project_dir)})
    return settings


def require_writable(data_dir: Path, command: str = "") -> None:
    """:class:`StorageError` when ``command`` (``staffroom <command>``; empty: any caller)
    would have to write to a read-only folder. Check before anything opens."""
    folder = DataFolder(data_dir)
    if (not_a_folder := folder.not_a_folder()) is not None:
        raise StorageError(f"the data folder {not_a_folder}. Nothing was opened")
    if folder.writable():
        return
    if not command:
        raise StorageError(
            f"the data folder {data_dir} is read-only for this user, and this request writes "
            "to it. Nothing was opened. Make it writable, or work on a copy"
        )
    raise StorageError(
        f"the data folder {data_dir} is read-only for this user, and `staffroom {command}` "
        "writes to it. Nothing was opened. Make it "
        f"writable, or work on a copy: cp -r {data_dir} COPY && staffroom {command} ... "
        "--data-dir COPY (read-only commands such as `sop list` and `history` work as is)"
    )


async def _read_only_store(folder: DataFolder) -> SopStore:
    """``sops.sqlite`` through a read-only connection: no schema set-up, no import.

    SQLite's ``mode=ro`` still needs the WAL index (``-shm``) file, which a read-only folder
    cannot create once the last writer removed it; ``immutable=1`` then reads the file as it
    is (no other process can be writing to a folder no one may write to).
    """
    path = folder.sops
    folder.check_stores(path.name)  # lost, not new: say so as elsewhere
    if not path.is_file():
        raise StorageError(
            f"there is no SOP store at {path} and the data folder is read-only, so none can be "
            "made: nothing to show (run a command in a writable data folder first)"
        )
    uri = path.resolve().as_uri()
    problem: sqlite3.Error | None = None
    for options in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = await connect_store(path, f"{uri}?{options}")
        except sqlite3.Error as exc:
            problem = exc
            continue
        try:
            await conn.execute("SELECT count(*) FROM sqlite_master")  # the file opens here
        except (sqlite3.Error, StorageError) as exc:
            await conn.close()  # else its worker thread keeps the process alive
            if isinstance(exc, StorageError):
                raise  # damaged (connect_store says so): immutable would read the same bytes
            problem = exc
            continue
        return SopStore(conn, path)
    raise StorageError(f"cannot read the SOP store {path} (read-only folder): {problem}")
