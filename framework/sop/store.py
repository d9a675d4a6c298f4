"""The SOP store: immutable versions, reviews and run outcomes in SQLite (``sops.sqlite``),
or in PostgreSQL for replicas sharing one database.

Several processes may share one file (rooms on different machines with one data folder):
the database runs in WAL mode with a busy timeout, and every write is one ``BEGIN IMMEDIATE``
transaction, so a read-then-write (next version number, approvals before publishing) cannot
interleave with another process's write. On PostgreSQL (:meth:`SopStore.open_database`) each
write transaction first takes an advisory lock on its SOP id, the same guarantee across
replicas (framework/sop/pg_connection.py says why). The SQL below is written once, in what
both accept (framework/sop/backend.py); rows are read by column name.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Self

import aiosqlite

from framework.database.pool import Database
from framework.errors import InputError, SopCardError, UnknownNameError
from framework.sessions.events import utc_now as now

from . import store_sql as stmt
from .backend import SopBackend, Transaction
from .connection import SopConnection, open_connection
from .model import (
    Approval,
    ChangeLogEntry,
    Outcome,
    SopVersion,
    Status,
    VersionMetrics,
    outcome_from_row,
    outcome_row,
    same_content,
    step_from_row,
    steps_json,
)
from .ref import SopRef
from .review import unapproved
from .trials import ENDED, PROMOTED, Trial

PUBLISHED_NOTE = "published"
"""The change_log entry a publish by a person adds (who is its ``by``)."""
DEPRECATED_NOTE = "deprecated: "
"""The start of the change_log entry a deprecation adds (the reason follows)."""


async def _set_status(conn: Transaction, sop_id: str, v: int, s: Status) -> None:
    # The one UPDATE the store ever makes to a version row.
    await conn.execute(stmt.SET_STATUS, (s.value, sop_id, v))


class SopStore:
    """Async access to the SOP store. Open with :meth:`open` (``sops.sqlite``) or
    :meth:`open_database` (PostgreSQL); close with :meth:`close`."""

    def __init__(self, conn: aiosqlite.Connection | SopBackend, path: Path | None = None) -> None:
        """Wrap an open ``sops.sqlite`` connection and its path, or a backend; use :meth:`open`
        or :meth:`open_database` instead."""
        if isinstance(conn, aiosqlite.Connection):
            conn = SopConnection(conn, path or Path("sops.sqlite"))
        self._db: SopBackend = conn
        self.path: Path | str = conn.where
        """The store named for messages: its file, or its database (no password)."""

    @classmethod
    async def open(cls, path: str | Path) -> Self:
        """Open (creating if needed) the store at ``path``: a file, or a folder to hold
        ``sops.sqlite``. :class:`StorageError` if it cannot be opened."""
        return cls(*await open_connection(path))

    @classmethod
    async def open_database(cls, db: Database) -> Self:
        """The store in PostgreSQL ``db`` (a replica's pool), its tables created or migrated
        first, once, whichever replica comes first. Replicas on one database share versions,
        reviews, trials and outcomes. :meth:`close` leaves the pool open: it is the replica's.
        :class:`StorageError` if the database refuses."""
        from .pg_connection import PgSopConnection

        return cls(await PgSopConnection.open(db))

    async def close(self) -> None:
        """Close the connection."""
        await self._db.close()

    async def add_version(
        self, version: SopVersion, *, reviewers: Sequence[str] = ()
    ) -> SopVersion:
        """Store a new version; it must be the next number for its SOP.

        Re-adding an identical version (same goal, scope, steps, body) returns the stored one;
        a different version under an existing number is a :class:`SopCardError`. A draft's
        ``reviewers`` are recorded in the same transaction (no publish can come between).
        """
        if not version.sop_id or "@" in version.sop_id or not version.steps:
            raise InputError(f"SOP {version.ref} needs an id without '@' and at least one step")
        async with self._db.write(version.sop_id) as conn:
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
            for name in dict.fromkeys(r.strip() for r in reviewers if r.strip()):
                await conn.execute(stmt.REVIEWER, (version.sop_id, version.version, name))
        return await self.get(version.sop_id, version.version)

    async def _insert(self, conn: Transaction, v: SopVersion) -> None:
        await conn.execute(
            "INSERT INTO sops (id, goal, scope) VALUES (?, ?, ?) ON CONFLICT (id) "
            "DO UPDATE SET goal = excluded.goal, scope = excluded.scope",
            (v.sop_id, v.goal, v.scope),
        )
        steps = steps_json(v.steps)
        row = (v.sop_id, v.version, v.goal, v.scope, steps, Status(v.status).value, v.body)
        sql = "INSERT INTO versions VALUES (?, ?, ?, ?, ?, ?, ?, ?)"  # columns in schema order
        await conn.execute(sql, (*row, v.created_at or now()))
        for e in v.change_log:
            await conn.execute(stmt.LOG, (v.sop_id, v.version, e.version, e.why, e.by, e.source))
        for a in v.approvals:
            await conn.execute(stmt.APPROVE, (v.sop_id, v.version, a.reviewer, a.at, a.note))

    async def add_products(self, version: SopVersion) -> SopVersion:
        """Store the products ``version``'s steps declare on the stored version of that number.

        The one change a stored procedure accepts, for a version stored before steps could
        declare products (its card declares them now): the stored steps must declare none
        and otherwise equal ``version``'s, else :class:`SopCardError`.
        """
        async with self._db.write(version.sop_id) as conn:
            stored = await self.get(version.sop_id, version.version)
            bare = tuple(replace(s, produces=()) for s in version.steps)
            if any(s.produces for s in stored.steps) or bare != stored.steps:
                raise SopCardError(
                    f"SOP {version.ref} is stored with different steps",
                    field="steps",
                    fix="versions are immutable: save the change as a new version",
                )
            sql = "UPDATE versions SET steps = ? WHERE sop_id = ? AND version = ?"
            await conn.execute(sql, (steps_json(version.steps), version.sop_id, version.version))
        return await self.get(version.sop_id, version.version)

    async def next_version(self, sop_id: str) -> int:
        """The number the next version of ``sop_id`` must have (1 for a new SOP)."""
        sql = "SELECT MAX(version) AS n FROM versions WHERE sop_id = ?"
        (row,) = await self._db.rows(sql, sop_id)
        return int(row["n"] or 0) + 1

    async def _load(self, sop_id: str, version: int) -> SopVersion | None:
        return next((v for v in await self._versions(sop_id) if v.version == version), None)

    async def _versions(self, sop_id: str) -> list[SopVersion]:
        # An SOP has a handful of versions: loading all of them keeps one query shape.
        logs: dict[int, list[ChangeLogEntry]] = {}
        for r in await self._db.rows(
            "SELECT * FROM change_log WHERE sop_id = ? ORDER BY seq", sop_id
        ):
            entry = ChangeLogEntry(r["entry_version"], r["why"], r["by"], r["source"])
            logs.setdefault(r["version"], []).append(entry)
        approvals: dict[int, list[Approval]] = {}
        for r in await self._db.rows(
            "SELECT * FROM approvals WHERE sop_id = ? ORDER BY at", sop_id
        ):
            approval = Approval(r["reviewer"], r["at"], r["note"])
            approvals.setdefault(r["version"], []).append(approval)
        rows = await self._db.rows(
            "SELECT * FROM versions WHERE sop_id = ? ORDER BY version", sop_id
        )
        return [
            SopVersion(
                **{
                    **r,
                    "steps": tuple(step_from_row(item) for item in json.loads(r["steps"])),
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
        return [r["id"] for r in await self._db.rows("SELECT id FROM sops ORDER BY id")]

    async def for_scope(self, scope: str) -> list[str]:
        """Ids of SOPs whose latest version has exactly this scope, sorted."""
        rows = await self._db.rows("SELECT id FROM sops WHERE scope = ? ORDER BY id", scope)
        return [r["id"] for r in rows]

    async def approve(
        self, sop_id: str, version: int, reviewer: str, note: str | None = None, *, at: str = ""
    ) -> SopVersion:
        """Record ``reviewer``'s approval (once per reviewer); deprecated versions refuse it."""
        if not reviewer.strip():
            raise InputError("a reviewer is needed to approve", field="reviewer")
        async with self._db.write(sop_id) as conn:
            current = await self.get(sop_id, version)
            if current.status is Status.DEPRECATED:
                raise InputError(f"SOP {current.ref} is deprecated and cannot be approved")
            await conn.execute(stmt.APPROVE, (sop_id, version, reviewer, at or now(), note))
        return await self.get(sop_id, version)

    async def publish(
        self,
        sop_id: str,
        version: int,
        *,
        required_reviewers: Sequence[str] = (),
        need_approval: bool = False,
        by: str | None = None,
    ) -> SopVersion:
        """Publish a draft once its reviewers approved it: those recorded when it was proposed
        (:meth:`request_review`) and ``required_reviewers``. With nobody named and
        ``need_approval``, one approval by anyone is needed (``staffroom sop publish``).

        :class:`InputError` names who has not approved and the fix, and nothing changes.
        Deprecated versions stay retired; publishing a published version returns it unchanged.
        A draft published while another version is published starts a trial (one per SOP: an
        open trial of another version ends unjudged). ``by``: the person who published it,
        recorded in the change_log as ``published`` (policy publishes name nobody).
        """
        async with self._db.write(sop_id) as conn:
            current = await self.get(sop_id, version)
            if current.status is Status.DEPRECATED:
                fix = f"make a new version from it: {sop_id}@{await self.next_version(sop_id)}"
                raise InputError(f"SOP {current.ref} is deprecated: not publishable", fix=fix)
            if current.status is Status.PUBLISHED:
                return current
            needed = [*await self.reviewers(sop_id, version), *required_reviewers]
            unapproved(current, needed, need_approval=need_approval)
            await _set_status(conn, sop_id, version, Status.PUBLISHED)
            if by is not None:
                await conn.execute(stmt.LOG, (sop_id, version, version, PUBLISHED_NOTE, by, None))
            others = await self._db.rows(
                "SELECT 1 FROM versions WHERE sop_id = ? AND version != ? AND status = ?",
                sop_id,
                version,
                Status.PUBLISHED.value,
            )
            if others:
                at = now()
                why = f"{current.ref} was published during the trial"
                await conn.execute(stmt.END_OPEN_TRIALS, (at, ENDED, why, sop_id))
                await conn.execute(
                    "INSERT INTO trials VALUES (?, ?, ?, NULL, NULL, NULL) ON CONFLICT DO NOTHING",
                    (sop_id, version, at),
                )
        return await self.get(sop_id, version)

    async def request_review(self, sop_id: str, version: int, reviewers: Sequence[str]) -> None:
        """Record who must approve the draft ``sop_id@version`` before it is published."""
        async with self._db.write(sop_id) as conn:
            current = await self.get(sop_id, version)
            if current.status is not Status.DRAFT:
                raise InputError(f"SOP {current.ref} is {current.status}: only a draft is reviewed")
            for name in dict.fromkeys(r.strip() for r in reviewers if r.strip()):
                await conn.execute(stmt.REVIEWER, (sop_id, version, name))

    async def reviewers(self, sop_id: str, version: int) -> list[str]:
        """Who must approve ``sop_id@version``, as recorded when it was proposed."""
        # rowid: SQLite's implicit one, an identity column of that name on PostgreSQL.
        sql = "SELECT reviewer FROM reviewers WHERE sop_id = ? AND version = ? ORDER BY rowid"
        return [r["reviewer"] for r in await self._db.optional_rows(sql, sop_id, version)]

    async def trials(self, sop_id: str) -> list[Trial]:
        """Every trial of ``sop_id``'s versions, oldest first (at most one is open)."""
        sql = "SELECT * FROM trials WHERE sop_id = ? ORDER BY started_at, version"
        return [Trial(**r) for r in await self._db.optional_rows(sql, sop_id)]

    async def end_trial(
        self, trial: Trial, verdict: str, reason: str, *, retire: int | None = None, why: str = ""
    ) -> bool:
        """End ``trial`` with ``verdict`` and, in the same transaction, deprecate version
        ``retire`` (the loser) with ``why`` in its change_log; a promoted trial version's
        change_log gets the reason. False if it had already ended (another process judged it
        first): then nothing changes."""
        async with self._db.write(trial.sop_id) as conn:
            changed = await conn.execute(
                "UPDATE trials SET ended_at = ?, verdict = ?, reason = ? "
                "WHERE sop_id = ? AND version = ? AND ended_at IS NULL",
                (now(), verdict, reason, trial.sop_id, trial.version),
            )
            if changed == 0:
                return False
            if verdict == PROMOTED:
                entry = (trial.sop_id, trial.version, trial.version, reason, "trial", None)
                await conn.execute(stmt.LOG, entry)
            if retire is not None:
                loser = await self.get(trial.sop_id, retire)
                if loser.status is not Status.DEPRECATED:
                    await _set_status(conn, trial.sop_id, retire, Status.DEPRECATED)
                    entry = (trial.sop_id, retire, retire, f"deprecated: {why}", "trial", None)
                    await conn.execute(stmt.LOG, entry)
        return True

    async def deprecate(
        self, sop_id: str, version: int, reason: str, *, by: str | None = None
    ) -> SopVersion:
        """Retire a version; the reason goes to its change_log. Repeating it is a no-op."""
        if not reason.strip():
            raise InputError("say why the version is deprecated", field="reason")
        async with self._db.write(sop_id) as conn:
            current = await self.get(sop_id, version)
            if current.status is not Status.DEPRECATED:
                await _set_status(conn, sop_id, version, Status.DEPRECATED)
                entry = (sop_id, version, version, DEPRECATED_NOTE + reason, by, None)
                await conn.execute(stmt.LOG, entry)
        return await self.get(sop_id, version)

    async def _require_ref(self, ref: str) -> None:
        parsed = SopRef.parse(ref, field="sop_ref", require_version=True)
        await self.get(parsed.sop_id, parsed.version)  # else outcomes of a typo are lost

    async def record_reference(
        self, sop_ref: str, session: str, user: str, *, at: str = ""
    ) -> None:
        """Note that ``session`` used ``sop_ref`` (e.g. it filled a room's announcement)."""
        await self._require_ref(sop_ref)
        await self._db.write_one(stmt.REFERENCE, (sop_ref, session, user, at or now()))

    async def record_outcome(self, outcome: Outcome, *, amend: bool = False) -> None:
        """Store how a run went; the same outcome (ref, session, ``at``) twice is kept once.
        With ``amend`` the stored one is replaced (feedback that came after the run closed)."""
        await self._require_ref(outcome.sop_ref)
        row = outcome_row(replace(outcome, at=outcome.at or now()))
        await self._db.write_one(stmt.outcome_insert(row, amend=amend), tuple(row.values()))

    async def record_replacement(self, old_ref: str, new_ref: str) -> None:
        """Note that ``new_ref`` was made to replace ``old_ref`` (counted once per pair)."""
        await self._require_ref(old_ref)
        await self._require_ref(new_ref)
        await self._db.write_one(
            "INSERT INTO replacements VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (old_ref, new_ref, now()),
        )

    async def outcomes(self, sop_ref: str) -> list[Outcome]:
        """Outcomes recorded against ``sop_ref``, oldest first."""
        rows = await self._db.rows(
            "SELECT * FROM outcomes WHERE sop_ref = ? ORDER BY at, id", sop_ref
        )
        return [outcome_from_row(r) for r in rows]

    async def metrics(self, sop_ref: str) -> VersionMetrics:
        """Aggregate references, outcomes and replacements of one version."""
        runs = await self._db.rows(stmt.runs_by_user(self._db.json_length("corrections")), sop_ref)
        (refs,) = await self._db.rows(stmt.REFERENCES_OF, sop_ref, sop_ref)
        return stmt.metrics_from(runs, refs)


__all__ = ["DEPRECATED_NOTE", "PUBLISHED_NOTE", "SopStore"]
