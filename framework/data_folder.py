"""The data folder's layout, in one place, and the record that tells a lost store from a new one.

Every name under a data folder (``STAFFROOM_HOME``, ``.staffroom`` by default) is spelled here
and nowhere else; stores, the doctor and the CLI ask :class:`DataFolder` for paths::

    data_dir/
    ├── stores.json                         which stores this folder has had (see below)
    ├── checkpoints.sqlite                  where every room stands (LangGraph checkpoints)
    ├── sops.sqlite                         every SOP version, its metrics, outcomes and drafts
    ├── ingest.sqlite                       accepted message ids per session (the server's)
    ├── schedules.sqlite                    every scheduled fire, once, with its outcome
    ├── webhook_failures.jsonl              webhook deliveries that failed every attempt
    ├── webhook_failures.<host>.jsonl       the same, per machine, with a database
    ├── sessions/
    │   ├── room:launch-42.jsonl            a session's history, one event per line
    │   ├── room:launch-42.jsonl.torn       unfinished lines moved aside (jsonl_log.py, rare)
    │   └── room:launch-42.jsonl.lock-kind  the lock kind its writers use (log_lock.py)
    ├── workspaces/room:launch-42/          files shared by everyone in the session
    ├── locks/room:launch-42.lock           held by the process running the room
    ├── memory/pm/alice/MEMORY.md           what pm remembers about alice (capped)
    ├── memory/pm/alice/shared.json         which of its sections rooms with others may see
    ├── history/dm:alice@pm/HISTORY.md      the session's dated summary lines
    ├── journals/{employee}/{YYYY-MM-DD}.md  knowledge layer 1: raw working notes, never deleted
    ├── trackers/{employee}/tasks.json ...   layer 3: tasks, goals, reflections (+ proposals.json)
    ├── knowledge/{employee}/{category}/     layer 4: one file per topic, private to the employee
    ├── library/shared/ library/isolated/    layer 5: the shared library and its isolated partition
    └── index/knowledge.sqlite              the search index (derived: rebuilt from the files)

Names that become paths (session keys, employees, users) are checked here with
:mod:`framework.names`' rule, so no path handed out leaves the folder.

SQLite creates a missing database file without a word, so a deleted ``sops.sqlite`` (every
SOP version, metric and draft) or ``checkpoints.sqlite`` (where every room stands) would come
back empty and look like a fresh start. ``stores.json`` records each store once it exists;
a store it lists that is missing or empty is a loss, reported before anything runs.

Damage (random bytes over a store's pages) shows only when a query reaches them, maybe deep in
LangGraph: stores open with :func:`connect_store`, whose every query turns it into one
:class:`~framework.errors.StorageError` naming the file and the way out.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from framework.atomic_files import replace_file
from framework.errors import InputError, StorageError
from framework.names import check_name, is_name

MANIFEST = "stores.json"
CHECKPOINTS = "checkpoints.sqlite"
SOPS = "sops.sqlite"
INGEST = "ingest.sqlite"
SCHEDULES = "schedules.sqlite"
WEBHOOK_FAILURES = "webhook_failures.jsonl"
SESSIONS = "sessions"
LOG_SUFFIX = ".jsonl"
WORKSPACES = "workspaces"
LOCKS = "locks"
LOCK_SUFFIX = ".lock"
MEMORY = "memory"
MEMORY_FILE = "MEMORY.md"
SHARED_FILE = "shared.json"
HISTORY = "history"
HISTORY_FILE = "HISTORY.md"
JOURNALS = "journals"
TRACKERS = "trackers"
KNOWLEDGE = "knowledge"
LIBRARY = "library"
KNOWLEDGE_INDEX = "index/knowledge.sqlite"
SQLITE_SIDECARS = ("-wal", "-shm")
"""Files SQLite keeps next to a store in WAL mode: they move with it."""

HOLDS = {
    CHECKPOINTS: "where every room stands (its step, whose turn, what it waits for)",
    SOPS: "every SOP version, its metrics, outcomes and drafts",
}
"""Each store and what is lost with it: the error says which."""

_CHANNEL = re.compile(r"[a-z]+")
_KEY_FIX = "write it as channel:chat_id, e.g. room:launch-42 or dm:alice@pm"


class SessionName(Protocol):
    """A session key (``framework.sessions.keys.SessionKey``, one layer up): ``str()`` of it
    is ``channel:chat_id``."""

    @property
    def chat_id(self) -> str: ...


@dataclass(frozen=True, slots=True)
class DataFolder:
    """A data folder's layout (``STAFFROOM_HOME``, ``.staffroom`` by default).

    Path methods only compute paths (nothing is created); the record methods read and write
    ``stores.json``.
    """

    root: Path

    # -- stores ------------------------------------------------------------------------------

    @property
    def manifest(self) -> Path:
        """``stores.json``: which stores this folder has had."""
        return self.root / MANIFEST

    @property
    def checkpoints(self) -> Path:
        """``checkpoints.sqlite``: where every room stands."""
        return self.root / CHECKPOINTS

    @property
    def sops(self) -> Path:
        """``sops.sqlite``: the SOP store."""
        return self.root / SOPS

    @property
    def ingest(self) -> Path:
        """``ingest.sqlite``: message ids the gateway accepted, with their first result."""
        return self.root / INGEST

    @property
    def schedules(self) -> Path:
        """``schedules.sqlite``: every scheduled fire (claimed once, with its outcome), each
        schedule's cursor, pauses and the schedulers' heartbeats."""
        return self.root / SCHEDULES

    @property
    def webhook_failures(self) -> Path:
        """``webhook_failures.jsonl``: deliveries that failed every attempt (to replay)."""
        return self.root / WEBHOOK_FAILURES

    def webhook_failures_of(self, host: str) -> Path:
        """``webhook_failures.<host>.jsonl``: the failed deliveries of the replicas on machine
        ``host`` (with a database). One file per machine, because appends from several
        machines to one file on a shared folder (NFS) are not atomic; the workers of one
        machine append to theirs as the processes of one folder do."""
        name = "".join(c if c.isalnum() or c in "-._" else "_" for c in host) or "host"
        return self.root / WEBHOOK_FAILURES.replace(".jsonl", f".{name}.jsonl")

    def store(self, name: str) -> Path:
        """The store file ``name`` (:data:`CHECKPOINTS` or :data:`SOPS`)."""
        return self.root / name

    # -- sessions ----------------------------------------------------------------------------

    @property
    def sessions_dir(self) -> Path:
        """``sessions/``: one JSONL log per session."""
        return self.root / SESSIONS

    def session_log(self, key: SessionName | str) -> Path:
        """``sessions/{channel}:{chat_id}.jsonl``."""
        return self.sessions_dir / f"{session_name(key)}{LOG_SUFFIX}"

    def session_names(self) -> list[str]:
        """The names (``channel:chat_id``) of every log under ``sessions/``, unchecked and
        unsorted: the caller parses them and skips what is not a session."""
        if not self.sessions_dir.is_dir():
            return []
        return [p.name.removesuffix(LOG_SUFFIX) for p in self.sessions_dir.glob(f"*{LOG_SUFFIX}")]

    def workspace(self, key: SessionName | str) -> Path:
        """``workspaces/{channel}:{chat_id}/``: the session's shared files."""
        return self.root / WORKSPACES / session_name(key)

    @property
    def locks_dir(self) -> Path:
        """``locks/``: one run lock per room."""
        return self.root / LOCKS

    def room_lock(self, key: SessionName | str) -> Path:
        """``locks/{channel}:{chat_id}.lock``: held by the process running the room."""
        return self.locks_dir / f"{session_name(key)}{LOCK_SUFFIX}"

    # -- memory ------------------------------------------------------------------------------

    @property
    def memory_dir(self) -> Path:
        """``memory/``: one folder per employee, one per person inside it."""
        return self.root / MEMORY

    def memory_file(self, employee: str, user: str) -> Path:
        """``memory/{employee}/{user}/MEMORY.md``; both names are checked, so the path never
        leaves ``memory/`` (:class:`~framework.errors.InputError` otherwise)."""
        check_name(employee, field="employee")
        check_name(user, field="user")
        return self.memory_dir / employee / user / MEMORY_FILE

    def shared_file(self, employee: str, user: str) -> Path:
        """``memory/{employee}/{user}/shared.json``: the sections rooms with others may see."""
        return self.memory_file(employee, user).with_name(SHARED_FILE)

    def memory_files(self) -> list[Path]:
        """Every ``memory/*/*/MEMORY.md`` there is (files or not), sorted."""
        if not self.memory_dir.is_dir():
            return []
        return sorted(self.memory_dir.glob(f"*/*/{MEMORY_FILE}"))

    @property
    def history_dir(self) -> Path:
        """``history/``: one folder per session."""
        return self.root / HISTORY

    def history_file(self, key: SessionName | str) -> Path:
        """``history/{channel}:{chat_id}/HISTORY.md``: the session's summary lines."""
        return self.root / HISTORY / session_name(key) / HISTORY_FILE

    # -- knowledge layers --------------------------------------------------------------------

    @property
    def journals_dir(self) -> Path:
        """``journals/``: one folder per employee, one dated file per day."""
        return self.root / JOURNALS

    @property
    def trackers_dir(self) -> Path:
        """``trackers/``: one folder per employee (tasks, goals, reflections) and proposals."""
        return self.root / TRACKERS

    @property
    def knowledge_dir(self) -> Path:
        """``knowledge/``: one folder of topic files per employee."""
        return self.root / KNOWLEDGE

    def topics_dir(self, employee: str) -> Path:
        """``knowledge/{employee}/``: the employee's private topic files (name checked)."""
        return self.knowledge_dir / check_name(employee, field="employee")

    @property
    def library_dir(self) -> Path:
        """``library/``: the shared library and its isolated partition."""
        return self.root / LIBRARY

    @property
    def knowledge_index(self) -> Path:
        """``index/knowledge.sqlite``: BM25 over every knowledge file (rebuilt when lost)."""
        return self.root / KNOWLEDGE_INDEX

    # -- access ------------------------------------------------------------------------------

    def writable(self) -> bool:
        """True when this process may create and change the folder's files.

        ``os.access`` answers for the file system too (a read-only mount is ``EROFS``), and for
        a folder that does not exist yet it asks the nearest parent that does.
        """
        if not os.access(self._nearest(), os.W_OK | os.X_OK):
            return False
        stores = (self.checkpoints, self.sops)
        return all(os.access(path, os.W_OK) for path in stores if path.exists())

    def not_a_folder(self) -> str | None:
        """Why ``root`` can hold no data folder (it, or a folder above it, is a file), or None."""
        existing = self._nearest()
        if existing.is_dir():
            return None
        below = "" if existing == self.root else f", so {self.root} cannot be made"
        return f"{existing} is a file, not a folder{below}"

    def _nearest(self) -> Path:  # root, or the nearest folder above it that exists
        existing = self.root
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        return existing

    # -- the record of stores ----------------------------------------------------------------

    def recorded(self) -> dict[str, str]:
        """Stores this folder has had: name -> when it was first seen (ISO 8601 UTC)."""
        try:
            data = json.loads(self.manifest.read_text("utf-8"))
        except (FileNotFoundError, NotADirectoryError):  # a folder of none, or no folder
            return {}
        except (OSError, ValueError) as exc:
            raise StorageError(
                f"{self.manifest} is unreadable ({exc}); it only records which stores this "
                "folder has had: delete it, then run `staffroom doctor` to check the folder"
            ) from exc
        stores = data.get("stores") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in stores.items()} if isinstance(stores, dict) else {}

    def lost_stores(self, *names: str) -> list[str]:
        """One sentence per store this folder had (of ``names``: all) now missing or empty."""
        problems = []
        for name in self.recorded():
            if names and name not in names:
                continue
            path = self.store(name)
            if not path.exists():
                problems.append(f"{path} is missing: it held {HOLDS.get(name, 'data')}")
            elif path.is_file() and path.stat().st_size == 0:
                problems.append(f"{path} is empty: it held {HOLDS.get(name, 'data')}")
        return problems

    def check_stores(self, *names: str) -> None:
        """Raise if a store this folder had is gone (SQLite would recreate it empty)."""
        problems = self.lost_stores(*names)
        if problems:
            raise StorageError(
                "; ".join(problems) + ". Nothing was opened. Restore it from a backup, or "
                "accept the loss and start it empty: staffroom doctor --repair"
            )

    def record(self, *names: str) -> None:
        """Note stores that now exist (kept from then on: their loss is an error)."""
        known = self.recorded()
        new = {n: _now() for n in names if n not in known and self.store(n).exists()}
        if not new:
            return
        with contextlib.suppress(OSError):  # a read-only folder: nothing to lose through us
            self._write_record({**known, **new})

    def forget(self, name: str) -> None:
        """Drop a store from the record (``doctor --repair`` starting it anew)."""
        known = self.recorded()
        if known.pop(name, None) is None:
            return
        self._write_record(known)

    def database(self) -> str | None:
        """The database this folder's checkpoints and SOPs live in (its URL without the
        password), once a command used one on it; None: they are SQLite files here."""
        try:
            data = json.loads(self.manifest.read_text("utf-8"))
        except (OSError, ValueError):  # none yet, or unreadable (recorded() says so)
            return None
        found = data.get("database") if isinstance(data, dict) else None
        return str(found) if isinstance(found, str) and found else None

    def record_database(self, shown: str) -> None:
        """Note that this folder's stores are in the database ``shown`` (no password)."""
        if self.database() != shown:
            with contextlib.suppress(OSError):
                self._write_record(self.recorded(), database=shown)

    def _write_record(self, stores: dict[str, str], *, database: str | None = None) -> None:
        # Replaced whole, so a reader never sees half a record.
        record: dict[str, object] = {"format": 1, "stores": stores}
        if (kept := database or self.database()) is not None:
            record["database"] = kept
        body = json.dumps(record, indent=2) + "\n"
        replace_file(self.manifest, body.encode(), prefix=f".{MANIFEST}.")

    def set_aside(self, name: str) -> list[str]:
        """Move store ``name`` and its SQLite side files to ``{name}.broken-{time}[-wal|-shm]``
        (kept, never deleted), and forget it: the next open starts it empty. Returns the new
        file names."""
        path = self.store(name)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        moved = []
        for suffix in ("", *SQLITE_SIDECARS):
            part = path.with_name(name + suffix)
            if part.exists():
                target = part.with_name(f"{name}.broken-{stamp}{suffix}")
                os.replace(part, target)
                moved.append(target.name)
        self.forget(name)
        return moved


def session_name(key: SessionName | str) -> str:
    """``str(key)`` once it is a safe ``channel:chat_id`` (the chat id follows the name rule);
    :class:`~framework.errors.InputError` otherwise, so a key never names a path elsewhere."""
    name = str(key)
    channel, sep, chat_id = name.partition(":")
    if not (sep and _CHANNEL.fullmatch(channel) and is_name(chat_id)):
        raise InputError(f"invalid session key {name!r}", field="session", fix=_KEY_FIX)
    return name


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
