"""The SOP store: immutable versions, reviews and run outcomes in SQLite (``sops.sqlite``).

Several processes may share one file (rooms on different machines with one data folder):
the database runs in WAL mode with a busy timeout, and every write is one ``BEGIN IMMEDIATE``
transaction, so a read-then-write (next version number, approvals before publishing) cannot
interleave with another process's write.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Self

import aiosqlite

from framework.data_folder import DataFolder
from framework.errors import InputError, SopCardError, StorageError, UnknownNameError
from framework.sessions.events import utc_now as now

from .model import (
    Approval,
    ChangeLogEntry,
    Correction,
    Outcome,
    SopVersion,
    Status,
    Step,
    VersionMetrics,
)
from .ref import SopRef
from .schema import prepare

_APPROVE = "INSERT OR IGNORE INTO approvals VALUES (?, ?, ?, ?, ?)"
_LOG = "INSERT INTO change_log VALUES (NULL, ?, ?, ?, ?, ?, ?)"  # NULL: the next seq
BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's transaction before giving up."""


def same_content(a: SopVersion, b: SopVersion) -> bool:
    """True if two versions describe the same procedure (goal, scope, steps, body).

    Status, approvals and change_log are left out on purpose: they change over a version's
    life (review, deprecation) while the procedure itself never does.
    """
    return (a.goal, a.scope, a.steps, a.body.strip()) == (b.goal, b.scope, b.steps, b.body.strip())


def _step(item: dict[str, Any]) -> Step:
    lists = {k: tuple(item.get(k, ())) for k in ("speakers", "tools", "produces")}
    return Step(**{**item, **lists})


def _steps_json(steps: Sequence[Step]) -> str:
    # A step without products is stored as before products existed, so the rows of such
    # versions stay readable by older code sharing the data folder.
    rows = [{k: v for k, v in asdict(s).items() if k != "produces" or v} for s in steps]
    return json.dumps(rows, ensure_ascii=False)


_DAMAGED = (
    "restore it from a backup, or move it aside with `staffroom doctor --repair` (its SOP "
    "versions, metrics and drafts are then lost; sop_library/ cards are imported again)"
)


class SopStore:
    """Async access to ``sops.sqlite``. Open with :meth:`open`; close with :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        """Wrap an open connection; use :meth:`open` instead."""
        self._conn = conn
        self._conn.row_factory = sqlite3.Row
        # One connection serves every task of this process: transactions must not overlap on it.
        self._lock = asyncio.Lock()
        self.path = path

    @classmethod
    async def open(cls, path: str | Path) -> Self:
        """Open (creating if needed) the store at ``path``: a file, or a folder to hold
        ``sops.sqlite``. :class:`StorageError` if it cannot be opened."""
        path = Path(path)
        if path.is_dir() or not path.suffix:
            path = DataFolder(path).sops
        folder = DataFolder(path.parent)
        folder.check_stores(path.name)  # lost, not new: never recreated empty without a word
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # timeout is SQLite's busy timeout; isolation_level=None: no implicit transactions,
            # each write says BEGIN itself.
            conn = await aiosqlite.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise StorageError(f"cannot open SOP store {path}: {exc}") from exc
        try:
            await prepare(conn)
        except sqlite3.Error as exc:
            await conn.close()
            raise StorageError(f"cannot use the SOP store {path}: {exc}; {_DAMAGED}") from exc
        folder.record(path.name)
        return cls(conn, path)

    async def close(self) -> None:
        """Close the connection."""
        await self._conn.close()

    @asynccontextmanager
    async def _write(self) -> AsyncIterator[aiosqlite.Connection]:
        # IMMEDIATE takes the write lock up front: a deferred transaction that reads and
        # then writes can fail with SQLITE_BUSY at the upgrade, which the busy timeout
        # does not retry.
        async with self._lock:
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    await self._conn.execute("COMMIT")
                except BaseException:
                    await self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise StorageError(f"cannot write to SOP store {self.path}: {exc}") from exc

    async def _write_one(self, sql: str, args: Sequence[Any] | dict[str, Any]) -> None:
        async with self._write() as conn:
            await conn.execute(sql, args)

    async def _rows(self, sql: str, *args: Any) -> list[sqlite3.Row]:
        async with self._conn.execute(sql, args) as cursor:
            return list(await cursor.fetchall())

    async def add_version(self, version: SopVersion) -> SopVersion:
        """Store a new version; it must be the next number for its SOP.

        Re-adding an identical version (same goal, scope, steps, body) returns the stored one;
        a different version under an existing number is a :class:`SopCardError`.
        """
        if not version.sop_id or "@" in version.sop_id or not version.steps:
            raise InputError(f"SOP {version.ref} needs an id without '@' and at least one step")
        async with self._write() as conn:
            existing = await self._load(version.sop_id, version.version)
            if existing is not None and same_content(existing, version):
                return existing
            expected = await self.next_version(version.sop_id)
            if version.version != expected:
                problem = "already exists with different content" if existing else "skips a number"
                raise SopCardError(
                    f"SOP {version.ref} {problem}",
                    field="version",
                    fix=f"versions are immutable: add it as {version.sop_id}@{expected}",
                )
            await self._insert(conn, version)
        return await self.get(version.sop_id, version.version)

    async def _insert(self, conn: aiosqlite.Connection, v: SopVersion) -> None:
        await conn.execute(
            "INSERT INTO sops (id, goal, scope) VALUES (?, ?, ?) ON CONFLICT (id) "
            "DO UPDATE SET goal = excluded.goal, scope = excluded.scope",
            (v.sop_id, v.goal, v.scope),
        )
        steps = _steps_json(v.steps)
        row = (v.sop_id, v.version, v.goal, v.scope, steps, Status(v.status).value, v.body)
        sql = "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?)"  # columns in schema order
        await conn.execute(sql, (*row, v.created_at or now()))
        for e in v.change_log:
            await conn.execute(_LOG, (v.sop_id, v.version, e.version, e.why, e.by, e.source))
        for a in v.approvals:
            await conn.execute(_APPROVE, (v.sop_id, v.version, a.reviewer, a.at, a.note))

    async def add_products(self, version: SopVersion) -> SopVersion:
        """Store the products ``version``'s steps declare on the stored version of that number.

        The one change a stored procedure accepts, for a version stored before steps could
        declare products (its card declares them now): the stored steps must declare none
        and otherwise equal ``version``'s, else :class:`SopCardError`.
        """
        async with self._write() as conn:
            stored = await self.get(version.sop_id, version.version)
            bare = tuple(replace(s, produces=()) for s in version.steps)
            if any(s.produces for s in stored.steps) or bare != stored.steps:
                raise SopCardError(
                    f"SOP {version.ref} is stored with different steps",
                    field="steps",
                    fix="versions are immutable: save the change as a new version",
                )
            sql = "UPDATE versions SET steps = ? WHERE sop_id = ? AND version = ?"
            await conn.execute(sql, (_steps_json(version.steps), version.sop_id, version.version))
        return await self.get(version.sop_id, version.version)

    async def next_version(self, sop_id: str) -> int:
        """The number the next version of ``sop_id`` must have (1 for a new SOP)."""
        (row,) = await self._rows("SELECT MAX(version) FROM versions WHERE sop_id = ?", sop_id)
        return int(row[0] or 0) + 1

    async def _load(self, sop_id: str, version: int) -> SopVersion | None:
        return next((v for v in await self._versions(sop_id) if v.version == version), None)

    async def _versions(self, sop_id: str) -> list[SopVersion]:
        # An SOP has a handful of versions: loading all of them keeps one query shape.
        logs: dict[int, list[ChangeLogEntry]] = {}
        for r in await self._rows("SELECT * FROM change_log WHERE sop_id = ? ORDER BY seq", sop_id):
            entry = ChangeLogEntry(r["entry_version"], r["why"], r["by"], r["source"])
            logs.setdefault(r["version"], []).append(entry)
        approvals: dict[int, list[Approval]] = {}
        for r in await self._rows("SELECT * FROM approvals WHERE sop_id = ? ORDER BY at", sop_id):
            approval = Approval(r["reviewer"], r["at"], r["note"])
            approvals.setdefault(r["version"], []).append(approval)
        rows = await self._rows("SELECT * FROM versions WHERE sop_id = ? ORDER BY version", sop_id)
        return [
            SopVersion(
                **{
                    **dict(r),
                    "steps": tuple(_step(item) for item in json.loads(r["steps"])),
                    "status": Status(r["status"]),
                    "change_log": tuple(logs.get(r["version"], ())),
                    "approvals": tuple(approvals.get(r["version"], ())),
                }
            )
            for r in rows
        ]

    async def get(self, sop_id: str, version: int | None = None) -> SopVersion:
        """One version (``None``: the latest of any status); :class:`UnknownNameError` if absent."""
        found = await self._versions(sop_id)
        match = [v for v in found if version in (None, v.version)]
        if match:
            return match[-1]
        if not found:
            known = ", ".join(await self.sop_ids()) or "(none)"
            fix = f"known SOPs: {known}; import cards from sop_library/"
            raise UnknownNameError(f"unknown SOP '{sop_id}'", fix=fix)
        fix = f"versions of '{sop_id}': {', '.join(str(v.version) for v in found)}"
        raise UnknownNameError(f"SOP '{sop_id}' has no version {version}", field="version", fix=fix)

    async def versions(self, sop_id: str) -> list[SopVersion]:
        """Every version of ``sop_id``, ascending (empty if unknown)."""
        return await self._versions(sop_id)

    async def sop_ids(self) -> list[str]:
        """All SOP ids, sorted."""
        return [r[0] for r in await self._rows("SELECT id FROM sops ORDER BY id")]

    async def for_scope(self, scope: str) -> list[str]:
        """Ids of SOPs whose latest version has exactly this scope, sorted."""
        rows = await self._rows("SELECT id FROM sops WHERE scope = ? ORDER BY id", scope)
        return [r[0] for r in rows]

    async def approve(
        self, sop_id: str, version: int, reviewer: str, note: str | None = None, *, at: str = ""
    ) -> SopVersion:
        """Record ``reviewer``'s approval (once per reviewer); deprecated versions refuse it."""
        if not reviewer.strip():
            raise InputError("a reviewer is needed to approve", field="reviewer")
        async with self._write() as conn:
            current = await self.get(sop_id, version)
            if current.status is Status.DEPRECATED:
                raise InputError(f"SOP {current.ref} is deprecated and cannot be approved")
            await conn.execute(_APPROVE, (sop_id, version, reviewer, at or now(), note))
        return await self.get(sop_id, version)

    async def publish(
        self, sop_id: str, version: int, *, required_reviewers: Sequence[str] = ()
    ) -> SopVersion:
        """Publish a draft once every required reviewer has approved it.

        :class:`InputError` lists who has not approved yet; deprecated versions stay retired.
        Publishing a published version returns it unchanged.
        """
        async with self._write() as conn:
            current = await self.get(sop_id, version)
            if current.status is Status.DEPRECATED:
                fix = f"make a new version from it: {sop_id}@{await self.next_version(sop_id)}"
                raise InputError(f"SOP {current.ref} is deprecated: not publishable", fix=fix)
            approved = {a.reviewer for a in current.approvals}
            missing = [r for r in dict.fromkeys(required_reviewers) if r not in approved]
            if missing:
                raise InputError(
                    f"SOP {current.ref} needs approval from: {', '.join(missing)}",
                    fix="each of them must approve the draft before it is published",
                )
            await self._set_status(conn, sop_id, version, Status.PUBLISHED)
        return await self.get(sop_id, version)

    async def deprecate(
        self, sop_id: str, version: int, reason: str, *, by: str | None = None
    ) -> SopVersion:
        """Retire a version; the reason goes to its change_log. Repeating it is a no-op."""
        if not reason.strip():
            raise InputError("say why the version is deprecated", field="reason")
        async with self._write() as conn:
            current = await self.get(sop_id, version)
            if current.status is not Status.DEPRECATED:
                await self._set_status(conn, sop_id, version, Status.DEPRECATED)
                entry = (sop_id, version, version, f"deprecated: {reason}", by, None)
                await conn.execute(_LOG, entry)
        return await self.get(sop_id, version)

    @staticmethod
    async def _set_status(conn: aiosqlite.Connection, sop_id: str, v: int, s: Status) -> None:
        # The one UPDATE the store ever makes to a version row.
        sql = "UPDATE versions SET status = ? WHERE sop_id = ? AND version = ?"
        await conn.execute(sql, (s.value, sop_id, v))

    async def _require_ref(self, ref: str) -> None:
        parsed = SopRef.parse(ref, field="sop_ref", require_version=True)
        await self.get(parsed.sop_id, parsed.version)  # else outcomes of a typo are lost

    async def record_reference(
        self, sop_ref: str, session: str, user: str, *, at: str = ""
    ) -> None:
        """Note that ``session`` used ``sop_ref`` (e.g. it filled a room's announcement)."""
        await self._require_ref(sop_ref)
        sql = 'INSERT INTO "references" (sop_ref, session, user, at) VALUES (?, ?, ?, ?)'
        await self._write_one(sql, (sop_ref, session, user, at or now()))

    async def record_outcome(self, outcome: Outcome) -> None:
        """Store how a run went; the same outcome (ref, session, ``at``) twice is kept once."""
        await self._require_ref(outcome.sop_ref)
        row = {**asdict(outcome), "success": int(outcome.success), "at": outcome.at or now()}
        row["corrections"] = json.dumps(row["corrections"], ensure_ascii=False)  # asdict: dicts
        row["failures"] = json.dumps(row["failures"], ensure_ascii=False)
        sql = f"INSERT OR IGNORE INTO outcomes ({', '.join(row)}) VALUES (:{', :'.join(row)})"
        await self._write_one(sql, row)

    async def record_replacement(self, old_ref: str, new_ref: str) -> None:
        """Note that ``new_ref`` was made to replace ``old_ref`` (counted once per pair)."""
        await self._require_ref(old_ref)
        await self._require_ref(new_ref)
        sql = "INSERT OR IGNORE INTO replacements VALUES (?, ?, ?)"
        await self._write_one(sql, (old_ref, new_ref, now()))

    async def outcomes(self, sop_ref: str) -> list[Outcome]:
        """Outcomes recorded against ``sop_ref``, oldest first."""
        rows = await self._rows("SELECT * FROM outcomes WHERE sop_ref = ? ORDER BY at, id", sop_ref)
        return [
            Outcome(
                **{
                    **{k: v for k, v in dict(r).items() if k != "id"},
                    "success": bool(r["success"]),
                    "corrections": tuple(Correction(**c) for c in json.loads(r["corrections"])),
                    "failures": tuple(json.loads(r["failures"])),
                }
            )
            for r in rows
        ]

    async def metrics(self, sop_ref: str) -> VersionMetrics:
        """Aggregate references, outcomes and replacements of one version."""
        runs = await self._rows(
            "SELECT user, COUNT(*) AS runs, SUM(success) AS ok, "
            "SUM(json_array_length(corrections)) AS corr, SUM(duration_s) AS dur, "
            "SUM(success AND json_array_length(corrections) = 0) AS hits, MAX(at) AS last "
            "FROM outcomes WHERE sop_ref = ? GROUP BY user ORDER BY user",
            sop_ref,
        )
        (refs,) = await self._rows(
            "SELECT COUNT(*) AS n, MAX(at) AS last, (SELECT COUNT(*) FROM replacements WHERE "
            'old_ref = ?1) AS replaced FROM "references" WHERE sop_ref = ?1',
            sop_ref,
        )
        total = sum(r["runs"] for r in runs)
        return VersionMetrics(
            references=refs["n"],
            runs=total,
            successes=sum(r["ok"] for r in runs),
            corrections=sum(r["corr"] for r in runs),
            mean_duration_s=sum(r["dur"] for r in runs) / total if total else 0.0,
            replaced=refs["replaced"],
            hit_rate_by_user={r["user"]: r["hits"] / r["runs"] for r in runs},
            last_used=max([refs["last"] or "", *(r["last"] for r in runs)]),
        )


__all__ = ["SopStore", "same_content"]
