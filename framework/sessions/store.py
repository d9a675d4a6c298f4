"""Each session's log and workspace under one data folder.

Where they live (``sessions/{key}.jsonl``, ``workspaces/{key}/``) is
:class:`~framework.data_folder.DataFolder`'s to say; this module hands out the objects.
"""

from __future__ import annotations

import threading
from pathlib import Path

from framework.data_folder import DataFolder
from framework.errors import InputError, UnknownNameError
from framework.sessions.entry import first_entry
from framework.sessions.jsonl_log import Durability, JsonlLog, LockKind
from framework.sessions.keys import SessionKey
from framework.sessions.payloads import EntryPayload, payload_of
from framework.sessions.workspace import Workspace

__all__ = ["SessionStore"]


class SessionStore:
    """Hands out each session's log and workspace under one data folder.

    Logs are cached per key so a process keeps one descriptor and one id index per file.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        durability: Durability = "turn",
        lock: LockKind = "flock",
    ) -> None:
        self.data_dir = Path(data_dir)
        self.folder = DataFolder(self.data_dir)
        self.durability: Durability = durability
        self.lock: LockKind = lock
        self._logs: dict[SessionKey, JsonlLog] = {}
        self._guard = threading.Lock()

    def log_path(self, key: SessionKey) -> Path:
        """``data_dir/sessions/{channel}:{chat_id}.jsonl``."""
        return self.folder.session_log(key)

    def log(self, key: SessionKey) -> JsonlLog:
        """The session's event log (the same object on every call with this key)."""
        with self._guard:
            log = self._logs.get(key)
            if log is None:
                log = JsonlLog(self.log_path(key), durability=self.durability, lock=self.lock)
                self._logs[key] = log
            return log

    def room_entry(self, key: SessionKey) -> EntryPayload:
        """What room ``key`` was entered with (its log's entry event: the scenario's id, and
        file); :class:`UnknownNameError` listing the sessions there are when its log has none."""
        entry = first_entry(self.log(key).iter_events())
        entered = payload_of(entry) if entry is not None else None
        if not isinstance(entered, EntryPayload):
            known = ", ".join(str(k) for k in self.list_sessions()) or "none yet"
            raise UnknownNameError(
                f"no room {key} in {self.data_dir}", field="session", fix=f"use one of: {known}"
            )
        return entered

    def workspace(self, key: SessionKey) -> Workspace:
        """The session's workspace: one folder per Room (or DM), shared by all its employees."""
        return Workspace(self.folder.workspace(key))

    def list_sessions(self) -> list[SessionKey]:
        """Every session that has a log, sorted by key; files with invalid names are ignored."""
        keys: list[SessionKey] = []
        for name in self.folder.session_names():
            try:
                keys.append(SessionKey.parse(name))
            except InputError:
                continue  # not ours (a backup, a hand-made file): never fail a listing on it
        return sorted(keys, key=str)

    def sync(self) -> None:
        """``fsync`` every open log (what the runtime does at the end of a turn)."""
        with self._guard:
            logs = list(self._logs.values())
        for log in logs:
            log.sync()

    def close(self) -> None:
        """Close every open log; the store can still be used afterwards (logs reopen)."""
        with self._guard:
            logs = list(self._logs.values())
            self._logs.clear()
        for log in logs:
            log.close()
