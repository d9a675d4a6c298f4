"""Copy a data folder's SQLite stores into PostgreSQL, and check the copy row by row.

``staffroom migrate --to`` (``migrate.py``) runs it while no replica serves. Four stores:

* ``checkpoints.sqlite`` through :func:`~framework.database.copy_checkpoints.copy_checkpoints`
  into a *plain* ``AsyncPostgresSaver`` (the fenced one refuses every write without a room
  lease, and nobody holds one during a migration);
* ``sops.sqlite`` into the ``staffroom_sop_*`` tables, every table's rows with their ids and
  seq numbers, oldest first, in one transaction;
* ``ingest.sqlite`` (the server's ledger), if there is one, into ``staffroom_ingest`` and
  ``staffroom_sent`` (``owner`` NULL: no replica queued those messages);
* ``schedules.sqlite`` (the fire ledger), if there is one: fires, cursors and pauses (not the
  heartbeats of the schedulers stopped for the migration).

Identity columns take the file's values (``OVERRIDING SYSTEM VALUE``) and their sequences are
moved past them, so the next row written on the database gets the next number. Rows already
there are kept (``ON CONFLICT``), so a copy that was interrupted is simply run again; until
the folder is switched its files are what is true, so the few columns the stores do update
(a version's status, a trial's end) take the file's value. A database that holds another SOP
history (versions the folder does not have, or the same number with another content) is
refused before anything is copied: two histories are never merged silently.

The check compares what each table holds after the copy, on the columns copied, with the
file: the same rows, as many of each.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from framework.data_folder import DataFolder
from framework.database.pool import Database
from framework.errors import InputError, StorageError

__all__ = [
    "SOP_TABLES",
    "Copied",
    "copy_checkpoint_store",
    "copy_ingest_ledger",
    "copy_schedule_store",
    "copy_sop_store",
    "refuse_history",
    "sop_history_conflicts",
    "sqlite_files",
]

SOP_TABLES = (
    "sops",
    "versions",
    "change_log",
    "approvals",
    "reviewers",
    "trials",
    "references",
    "outcomes",
    "replacements",
)
"""The SOP store's tables, parents before the rows that refer to them."""

_SOP_KEYS = {
    "sops": ("id",),
    "versions": ("sop_id", "version"),
    "change_log": ("seq",),
    "approvals": ("sop_id", "version", "reviewer"),
    "reviewers": ("sop_id", "version", "reviewer"),
    "trials": ("sop_id", "version"),
    "references": ("id",),
    "outcomes": ("id",),
    "replacements": ("old_ref", "new_ref"),
}
# The columns the store updates after a row is written: the file's value wins on a re-run.
_SOP_UPDATED = {
    "sops": ("goal", "scope"),
    "versions": ("status", "steps"),
    "trials": ("ended_at", "verdict", "reason"),
}
_IDENTITY = {"change_log": "seq", "reviewers": "rowid", "references": "id", "outcomes": "id"}
# What makes a version that version: the same number with another of these is another history.
_VERSION_SAME = ("goal", "scope", "body", "created_at")


@dataclass
class Copied:
    """One table (or the checkpoints) after the copy: rows in the file, rows in the database,
    and how many of the file's rows the database lacks (or holds otherwise)."""

    store: str
    table: str
    source: int
    target: int
    missing: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The check's verdict for this table: the same rows on both sides."""
        return self.missing == 0 and self.source == self.target


def _q(name: str) -> str:
    return f'"{name}"'


def _read_only(path: Path) -> str:
    """``path`` as a read-only SQLite URI (``as_uri`` escapes a ``?`` or ``#`` in the name)."""
    return path.resolve().as_uri() + "?mode=ro"


@contextmanager
def _read(path: Path) -> Iterator[sqlite3.Connection]:
    """``path`` read-only: the migration never changes the folder's files."""
    try:
        conn = sqlite3.connect(_read_only(path), uri=True)
    except sqlite3.Error as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    with closing(conn):
        yield conn


def _rows(conn: sqlite3.Connection, table: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Every row of ``table`` in the order written (rowid), with its column names; SQLite's
    implicit rowid is kept as ``rowid`` for ``reviewers`` (the order reviewers were named)."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if exists is None:  # a file from before the table was added
        return [], []
    cursor = conn.execute(f"SELECT rowid AS _rowid_, * FROM {_q(table)} ORDER BY rowid")
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    keep = [i for i, n in enumerate(names) if n != "_rowid_" and n != "rowid"]
    if table == "reviewers":
        keep.append(0)
    columns = [names[i] if i else "rowid" for i in keep]
    return columns, [tuple(row[i] for i in keep) for row in rows]


async def _columns(db: Database, table: str) -> set[str]:
    async with db.connection() as conn:
        cursor = await conn.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s",
            (table,),
        )
        return {row["column_name"] for row in await cursor.fetchall()}


async def _target_rows(db: Database, table: str, columns: list[str]) -> list[tuple[Any, ...]]:
    async with db.connection() as conn:
        cursor = await conn.execute(f"SELECT {', '.join(map(_q, columns))} FROM {table}")
        return [tuple(row[c] for c in columns) for row in await cursor.fetchall()]


def _compare(
    store: str, table: str, source: list[tuple[Any, ...]], target: list[tuple[Any, ...]]
) -> Copied:
    theirs = Counter(target)
    missing = sum((Counter(source) - theirs).values())
    return Copied(store, table, len(source), len(target), missing)


async def sop_history_conflicts(path: Path, db: Database) -> list[str]:
    """The SOP versions that make ``db``'s SOP history another than the file's: versions the
    file does not have, or the same number with another goal, scope, body or time. Empty when
    the database holds none, or only the file's (an interrupted copy)."""
    with _read(path) as conn:
        columns, rows = _rows(conn, "versions")
    if not rows:
        ours: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    else:
        at = {c: i for i, c in enumerate(columns)}
        ours = {
            (r[at["sop_id"]], r[at["version"]]): tuple(r[at[c]] for c in _VERSION_SAME)
            for r in rows
        }
    cols = ["sop_id", "version", *_VERSION_SAME]
    found: list[str] = []
    for row in await _target_rows(db, "staffroom_sop_versions", cols):
        key, same = (row[0], row[1]), row[2:]
        if key not in ours:
            found.append(f"{key[0]}@{key[1]} (not in this folder)")
        elif ours[key] != same:
            found.append(f"{key[0]}@{key[1]} (another content)")
    return sorted(found)


async def _copy_table(
    db: Database,
    target: str,
    columns: list[str],
    rows: list[tuple[Any, ...]],
    *,
    keys: tuple[str, ...],
    updated: tuple[str, ...] = (),
    identity: str | None = None,
    values: str | None = None,
) -> None:
    """Insert ``rows`` into ``target``: existing keys kept (``updated`` columns refreshed),
    identity values kept and the identity's sequence moved past them."""
    names = ", ".join(map(_q, columns))
    placeholders = values or ", ".join(["%s"] * len(columns))
    overriding = " OVERRIDING SYSTEM VALUE" if identity else ""
    changed = [c for c in updated if c in columns]
    on_conflict = (
        f"ON CONFLICT ({', '.join(map(_q, keys))}) DO UPDATE SET "
        + ", ".join(f"{_q(c)} = EXCLUDED.{_q(c)}" for c in changed)
        if changed
        else "ON CONFLICT DO NOTHING"
    )
    sql = f"INSERT INTO {target} ({names}){overriding} VALUES ({placeholders}) {on_conflict}"
    async with db.connection() as conn, conn.transaction():
        if rows:
            async with conn.cursor() as cursor:
                await cursor.executemany(sql, rows)
        if identity:
            await conn.execute(
                f"SELECT setval(pg_get_serial_sequence(%s, %s), "
                f"(SELECT COALESCE(MAX({_q(identity)}), 0) + 1 FROM {target}), false)",
                (target, identity),
            )


async def copy_sop_store(path: Path, db: Database) -> list[Copied]:
    """Copy ``sops.sqlite`` at ``path`` into ``db``'s SOP tables (made first); per table, the
    check of what the database holds afterwards."""
    from framework.sop.store import SopStore

    await SopStore.open_database(db)  # the tables, migrated
    with _read(path) as conn:
        tables = {table: _rows(conn, table) for table in SOP_TABLES}
    checked = []
    for table in SOP_TABLES:
        target = f"staffroom_sop_{table}"
        columns, rows = tables[table]
        there = await _columns(db, target)
        if lost := [c for c in columns if c not in there]:
            raise StorageError(
                f"{path}: table {table} has columns the database's {target} lacks "
                f"({', '.join(lost)}); nothing more was copied. Update Staffroom (the "
                "database's tables are made by the version that runs), then migrate again"
            )
        await _copy_table(
            db,
            target,
            columns,
            rows,
            keys=_SOP_KEYS[table],
            updated=_SOP_UPDATED.get(table, ()),
            identity=_IDENTITY.get(table),
        )
        after = await _target_rows(db, target, columns) if columns else []
        checked.append(_compare("sops", table, rows, after))
    return checked


_LEDGER_TABLES = {
    "ingest": ("staffroom_ingest", ("session", "key"), "seq"),
    "sent": ("staffroom_sent", ("session", "platform_id"), None),
}


async def copy_ingest_ledger(path: Path, db: Database) -> list[Copied]:
    """Copy the server's ``ingest.sqlite`` at ``path`` into ``staffroom_ingest`` and
    ``staffroom_sent`` (made first); ``created`` (seconds since 1970 in the file) becomes a
    timestamp, ``owner`` stays NULL. Per table, the check (``created`` aside: a timestamp
    keeps microseconds, the file's float more)."""
    from framework.serving.pg_ledger import PgLedgerTables

    await PgLedgerTables.open(db)
    with _read(path) as conn:
        tables = {table: _rows(conn, table) for table in _LEDGER_TABLES}
    checked = []
    for table, (target, keys, identity) in _LEDGER_TABLES.items():
        columns, rows = tables[table]
        values = ", ".join("to_timestamp(%s)" if c == "created" else "%s" for c in columns)
        await _copy_table(
            db, target, columns, rows, keys=keys, identity=identity, values=values or None
        )
        compared = [c for c in columns if c != "created"]
        mine = [tuple(v for c, v in zip(columns, r, strict=True) if c != "created") for r in rows]
        after = await _target_rows(db, target, compared) if compared else []
        checked.append(_compare("ingest", table, mine, after))
    return checked


# Each table: its key, and its time columns (ISO text in the file, timestamptz there).
_SCHEDULE_TABLES = {
    "schedule_fires": (("fire_id",), ("due", "claimed_until", "started", "finished")),
    "schedule_cursors": (("schedule",), ("last_due",)),
    "schedule_pauses": (("schedule",), ("since",)),
}
_ISO = 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'  # the file's time format (fire_sqlite.py), in to_char's


async def copy_schedule_store(path: Path, db: Database) -> list[Copied]:
    """Copy ``schedules.sqlite`` at ``path`` into the ``schedule_*`` tables (made first), so
    no fire runs again, no cursor goes back and a paused schedule stays paused; per table, the
    check (times compared in the file's text)."""
    from framework.schedules.fire_pg import PgFireStore

    await PgFireStore.open(db)
    with _read(path) as conn:
        tables = {table: _rows(conn, table) for table in _SCHEDULE_TABLES}
    checked = []
    for table, (keys, times) in _SCHEDULE_TABLES.items():
        columns, rows = tables[table]
        values = ", ".join("CAST(%s AS timestamptz)" if c in times else "%s" for c in columns)
        updated = tuple(c for c in columns if c not in keys)
        await _copy_table(db, table, columns, rows, keys=keys, updated=updated, values=values)
        if not columns:  # a file from before the table was added
            checked.append(_compare("schedules", table, [], []))
            continue
        shown = ", ".join(
            f"to_char({c} AT TIME ZONE 'UTC', '{_ISO}') AS {c}" if c in times else c
            for c in columns
        )
        async with db.connection() as conn:
            found = await (await conn.execute(f"SELECT {shown} FROM {table}")).fetchall()
        after = [tuple(row[c] for c in columns) for row in found]
        checked.append(_compare("schedules", table, rows, after))
    return checked


async def copy_checkpoint_store(path: Path, db: Database) -> list[Copied]:
    """Copy ``checkpoints.sqlite`` at ``path`` into LangGraph's tables on ``db`` (made first,
    with the lease table); the check: as many checkpoints and pending writes, and each
    thread's newest checkpoint the same."""
    import aiosqlite
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    from framework.database.copy_checkpoints import copy_checkpoints, count_checkpoints
    from framework.database.fenced_checkpoints import open_checkpoints

    await open_checkpoints(db)
    try:
        conn = await aiosqlite.connect(_read_only(path), uri=True)
    except (aiosqlite.Error, OSError) as exc:
        raise StorageError(f"cannot read {path}: {exc}") from exc
    try:
        source = AsyncSqliteSaver(conn)
        source.is_setup = True  # read-only: its tables are there, or the file has none
        tables = await conn.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
        )
        if not list(tables):
            return [Copied("checkpoints", "checkpoints", 0, 0)]
        # Plain: the fenced saver refuses writes without a room lease, and none is held now.
        target = AsyncPostgresSaver(conn=db.pool)
        copied = await copy_checkpoints(source, target)
        there = await count_checkpoints(target)
    finally:
        await conn.close()
    differ = [t for t, newest in copied.newest.items() if there.newest.get(t) != newest]
    threads = Copied("checkpoints", "rooms", len(copied.newest), len(there.newest), len(differ))
    threads.notes = [f"{t}: newest checkpoint differs" for t in differ]
    return [
        Copied("checkpoints", "checkpoints", copied.checkpoints, there.checkpoints),
        Copied("checkpoints", "writes", copied.writes, there.writes),
        threads,
    ]


def sqlite_files(folder: DataFolder) -> list[Path]:
    """The folder's store files that now hold nothing in use (with their SQLite side files)."""
    found = []
    for path in (folder.checkpoints, folder.sops, folder.ingest, folder.schedules):
        for suffix in ("", "-wal", "-shm"):
            part = path.with_name(path.name + suffix)
            if part.exists():
                found.append(part)
    return found


def refuse_history(conflicts: list[str], shown: str) -> InputError:
    """The error for a database that holds another SOP history than the folder."""
    listed = ", ".join(conflicts[:5]) + (
        f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
    )
    return InputError(
        f"the database {shown} already holds another SOP history than this folder: {listed}; "
        "nothing was copied (two histories are never merged)",
        field="--to",
        fix="migrate into an empty database (createdb NAME), or into the one this folder's "
        "SOPs came from",
    )
