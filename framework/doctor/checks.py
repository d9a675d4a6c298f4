"""Look over a data folder and say what is wrong with it, without changing anything.

Each problem is a :class:`Finding` with the file or session it concerns, what is wrong, what
to do, and what ``--repair`` would do about it (if anything: a log line or a MEMORY.md is
never rewritten by a repair; that could lose what a person wrote).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from framework.data_folder import CHECKPOINTS, HOLDS, SOPS, DataFolder
from framework.errors import StorageError
from framework.runtime.graph import RoomGraph, build_graph
from framework.runtime.recovery import integrity_problem
from framework.sessions.entry import last_entry, scenario_of
from framework.sessions.events import Event
from framework.sessions.store import SessionStore
from framework.settings import Settings
from framework.stores import Stores

Repair = str
"""``move_aside`` (a damaged store), ``start_empty`` (a lost store), ``rebuild`` (a room)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem in a data folder."""

    where: str
    problem: str
    fix: str
    repair: Repair | None = None
    """What ``staffroom doctor --repair`` does about it; None: only a person can fix it."""
    session: str | None = None
    scenario: str | None = None
    """For a room: the scenario its checkpoint or log names (what a rebuild opens it with)."""


@dataclass(slots=True)
class Diagnosis:
    """Every finding, and how much was looked at."""

    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings


async def diagnose(settings: Settings) -> Diagnosis:
    """Check the stores, every session log, every room's checkpoint and every MEMORY.md."""
    out = Diagnosis()
    if not settings.data_dir.is_dir():
        out.findings.append(
            Finding(
                str(settings.data_dir),
                "the data folder does not exist",
                "check --data-dir / $STAFFROOM_HOME (nothing has run in this one yet)",
            )
        )
        return out
    # The session logs are read as every reader reads them, through the folder's Stores (a
    # bad line is skipped and counted, never fatal). The SQLite stores and the MEMORY.md files
    # are looked at raw below: the Stores would set up, import into or leniently read exactly
    # what the doctor is here to find damaged.
    async with await Stores.open(settings=settings) as stores:
        folder = stores.folder
        try:
            recorded = folder.recorded()
        except StorageError as exc:
            out.findings.append(Finding(str(folder.manifest), str(exc), "delete it", None))
            recorded = {}
        on_database = settings.database is not None
        healthy = _check_stores(folder, recorded, out, on_database=on_database)
        out.checked["logs"] = _check_logs(stores.sessions, out)
        if on_database:
            out.checked["rooms"] = await _check_rooms_on_database(stores, out)
        else:
            usable = CHECKPOINTS in healthy or not folder.checkpoints.exists()
            broken = any(f.where == str(folder.checkpoints) for f in out.findings)
            out.checked["rooms"] = await _check_rooms(stores, out) if usable and not broken else 0
        out.checked["memory files"] = _check_memory(settings, folder, out)
    return out


def _check_stores(
    folder: DataFolder, recorded: dict[str, str], out: Diagnosis, *, on_database: bool
) -> set[str]:
    healthy: set[str] = set()
    # With a database the rooms' checkpoints and the SOPs live there: a checkpoints.sqlite or
    # sops.sqlite left behind (or archived after `staffroom migrate`) is nobody's store.
    names = () if on_database else (CHECKPOINTS, SOPS)
    for name in names:
        path = folder.store(name)
        if not path.exists() or (path.is_file() and path.stat().st_size == 0):
            if name in recorded:
                state = "missing" if not path.exists() else "empty"
                out.findings.append(
                    Finding(
                        str(path),
                        f"{state}; it held {HOLDS[name]}",
                        "restore it from a backup, or accept the loss: --repair starts it empty"
                        + (" and rebuilds every room from its log" if name == CHECKPOINTS else ""),
                        "start_empty",
                    )
                )
            continue  # never created: a new folder, nothing lost
        problem = _sqlite_problem(path)
        if problem is None:
            healthy.add(name)
            continue
        out.findings.append(
            Finding(
                str(path),
                f"damaged: {problem}; it holds {HOLDS[name]}",
                "restore it from a backup, or --repair moves it aside (kept as "
                f"{name}.broken-<time>) and starts it empty"
                + (", then rebuilds every room from its log" if name == CHECKPOINTS else ""),
                "move_aside",
            )
        )
    out.checked["stores"] = len(names)
    return healthy


def _sqlite_problem(path: Path) -> str | None:
    # Raw and read-only: opening it through the Stores would set it up or import the SOP
    # cards into it (writes), and refuse a damaged one instead of saying what is wrong.
    if not path.is_file():
        return "it is not a file"
    # A read-only folder cannot hold WAL's -shm file: read it as immutable there, so a
    # read-only store is not taken for a damaged one.
    writable = os.access(path.parent, os.W_OK)
    query = "mode=ro" if writable else "mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(f"file:{path}?{query}", uri=True)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)
    verdict = "; ".join(str(r[0]) for r in rows)
    return None if verdict == "ok" else verdict


def _check_logs(store: SessionStore, out: Diagnosis) -> int:
    keys = store.list_sessions()
    for key in keys:
        log = store.log(key)
        for _ in log.iter_events():
            pass
        bad = list(log.problems)
        if bad:
            shown = "; ".join(str(p) for p in bad[:3]) + (" …" if len(bad) > 3 else "")
            out.findings.append(
                Finding(
                    str(log.path),
                    f"{len(bad)} unreadable line(s), skipped by every reader: {shown}",
                    "fix or delete those lines by hand (they are kept as they are, nothing is "
                    "dropped automatically)",
                    session=str(key),
                )
            )
    store.close()  # the logs are read afresh by the rooms' check, as a reader opening them would
    return len(keys)


async def _check_rooms(stores: Stores, out: Diagnosis) -> int:
    path = stores.folder.checkpoints
    # Raw and read-only, not Stores.checkpoints(): that creates the file and its tables.
    # No checkpoints file (never made, or just started anew by --repair): every room has none.
    conn = await aiosqlite.connect(f"file:{path}?mode=ro", uri=True) if path.exists() else None
    try:
        graph = build_graph(AsyncSqliteSaver(conn)) if conn is not None else None
        return await _compare_rooms(stores, graph, (aiosqlite.OperationalError,), out)
    finally:
        if conn is not None:
            await conn.close()


async def _check_rooms_on_database(stores: Stores, out: Diagnosis) -> int:
    # LangGraph's own saver on the pool, not the fenced one: reads need no lease, and its
    # setup (tables, migrations) is not run: a database nothing ran on has no checkpoints.
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.errors import UndefinedTable

    db = await stores.database()
    assert db is not None  # the caller checked settings.database
    graph = build_graph(AsyncPostgresSaver(db.pool))
    return await _compare_rooms(stores, graph, (UndefinedTable,), out)


async def _compare_rooms(
    stores: Stores,
    graph: RoomGraph | None,
    no_tables: tuple[type[Exception], ...],
    out: Diagnosis,
) -> int:
    """Compare each room's checkpoint with its log (``no_tables``: what reading a store
    nothing ran on raises: every room has no checkpoint then)."""
    store = stores.sessions
    keys = store.list_sessions()
    for key in keys:
        config: Any = {"configurable": {"thread_id": str(key)}}
        values: dict[str, Any] = {}
        try:
            if graph is not None:
                values = dict((await graph.aget_state(config)).values or {})
        except no_tables:
            pass
        log = store.log(key)
        problem = integrity_problem(values, log)
        if problem is None:
            continue
        out.findings.append(
            Finding(
                str(key),
                problem,
                "restore the lost file from a backup, or --repair rebuilds the room's "
                "checkpoint from its log (no model is called)",
                "rebuild",
                session=str(key),
                scenario=values.get("scenario") or _scenario_in_log(log.tail(4096)),
            )
        )
    return len(keys)


def _scenario_in_log(events: list[Event]) -> str | None:
    return scenario_of(last_entry(events))


def _check_memory(settings: Settings, folder: DataFolder, out: Diagnosis) -> int:
    # The bytes themselves, not the MemoryStore: it reads undecodable bytes as U+FFFD.
    paths = folder.memory_files()
    for path in paths:
        if not path.is_file():
            out.findings.append(
                Finding(str(path), "not a file", "move it away; the employee starts it anew")
            )
            continue
        raw = path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            out.findings.append(
                Finding(
                    str(path),
                    f"not UTF-8 ({exc.reason} at byte {exc.start}); it is never rewritten",
                    f"convert it, e.g. iconv -f GBK -t UTF-8 {path} > MEMORY.utf8 && mv ...",
                )
            )
            continue
        if len(text) > settings.memory_cap:
            out.findings.append(
                Finding(
                    str(path),
                    f"{len(text):,} characters, over the {settings.memory_cap:,} cap (prompts "
                    "see it cut at the cap)",
                    "shorten it by hand, or let consolidation fold it",
                )
            )
    return len(paths)
