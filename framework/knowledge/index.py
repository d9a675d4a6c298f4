"""The knowledge index: BM25 over topic files, the shared library, the isolated partition, archives.

``docs`` holds each document and the content hash / mtime / size it was indexed at; each
partition has an FTS5 table of pre-segmented words (:func:`index_tokens`, space-joined: the
``ascii`` tokenizer only splits on spaces, never segments Chinese). Ranking is FTS5's ``bm25()``
(k1 1.2, b 0.75, idf ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6), as rank_bm25 computes it
with that floor (``tests/knowledge/test_bm25_agreement.py``); which words count is
:mod:`.ranking`'s. Why it is built this way:

* Isolation is structural: a search reads only the FTS5 tables of the partitions it names and
  checks ``docs.partition`` again; isolated documents do not even shift open scores.
* A sync reads a file again when its mtime or size changed, or when it changed just before it
  was last read (:data:`RACY_S`; :mod:`.folder_scan`), and segments it again when its bytes did.
* ``sqlite3`` in a worker thread (``asyncio.to_thread``), not aiosqlite: an operation (jieba,
  which is CPU work, then statements and commit) is one hop; aiosqlite makes each statement a
  hop and leaves jieba on the event loop. WAL and a busy timeout let processes share the file.
* Derived data: a broken index is deleted and rebuilt from the files, never repaired.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self, TypeVar

from framework.errors import InputError, StorageError

from .documents import (
    Document,
    Partition,
    SearchResult,
    SyncReport,
    index_tokens,
    parse_partition,
)
from .folder_scan import RACY_S, Folder, Plan, scan
from .ranking import COMMON_SHARE, NO_WORDS, TABLES, marks, search_rows
from .tokens import tokenizer_version

__all__ = ["COMMON_SHARE", "IN_MEMORY", "NO_WORDS", "RACY_S", "KnowledgeIndex"]

T = TypeVar("T")
SCHEMA_VERSION = "1"
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another process's transaction
IN_MEMORY = ":memory:"
"""The path of an index kept in this process's memory (a replica's own)."""
_FIX = "the index holds only what the files hold: delete it (and its -wal, -shm), then sync again"

_COLUMNS = "doc_id, collection, partition, scope, source, title, text, content_hash, mtime_ns, size"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE,
    collection TEXT NOT NULL, partition TEXT NOT NULL CHECK (partition IN ('open', 'isolated')),
    scope TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
    content_hash TEXT NOT NULL, mtime_ns INTEGER, size INTEGER, indexed_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS docs_source ON docs (source);
CREATE INDEX IF NOT EXISTS docs_collection ON docs (collection);
CREATE TABLE IF NOT EXISTS roots (root TEXT, collection TEXT, partition TEXT, scope TEXT,
    pattern TEXT, PRIMARY KEY (root, collection));
""" + "".join(
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {t} USING fts5(tokens, tokenize='ascii');"
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {t}_vocab USING fts5vocab({t}, 'row');"
    for t in TABLES.values()
)


class KnowledgeIndex:
    """Async BM25 search over documents and folders of markdown files (see the module doc)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        """Wrap an open, prepared connection; use :meth:`open` instead."""
        self._conn = conn
        self._lock = threading.Lock()  # one connection: calls from worker threads take turns
        self.path = path

    @classmethod
    async def open(cls, path: str | Path, *, fixed_ids: bool = False) -> Self:
        """Open (creating if needed) the index file at ``path`` (:data:`IN_MEMORY`: an index in
        this process's memory); rebuild it if it was segmented by other rules.
        :class:`StorageError`, with the fix, if it is not a usable index.

        Equal scores are ordered by rowid: the order documents were first indexed in, or with
        ``fixed_ids`` (a replica's own index) rowids derived from the doc ids, so that every
        index holding the same documents orders ties alike, whatever order it indexed them in
        (asked of a new index; an index file keeps what it was created with)."""
        index = cls(await asyncio.to_thread(_connect, Path(path)), Path(path))
        if fixed_ids:
            await index._call(_write, _fix_ids)
        if await index._call(_meta, "tokenizer") != tokenizer_version():
            await index.rebuild()
        return index

    async def close(self) -> None:
        """Close the file."""
        await self._call(sqlite3.Connection.close)

    async def upsert(self, *docs: Document) -> int:
        """Add or replace documents in one transaction, searchable when this returns; returns
        how many changed (one identical to what is stored is left alone)."""
        ready = await asyncio.to_thread(lambda: [(d, index_tokens(d.title, d.text)) for d in docs])
        return await self._call(_write, lambda conn: [_store(conn, *d) for d in ready].count(True))

    async def remove(self, doc_id: str) -> bool:
        """Remove one document; ``False`` if it was not there."""
        return bool(await self._call(_write, _remove, "doc_id = ?", doc_id))

    async def remove_where(self, *, source_prefix: str) -> tuple[str, ...]:
        """Remove the documents whose ``source`` starts with ``source_prefix`` (a string prefix:
        end a folder with ``/``); returns their doc ids (for "forget")."""
        where = "substr(source, 1, ?) = ?"
        return await self._call(_write, _remove, where, len(source_prefix), source_prefix)

    async def search(
        self,
        query: str,
        *,
        collections: Sequence[str] | None = None,
        partitions: Sequence[Partition | str] = (Partition.OPEN,),
        scopes: Sequence[str] | None = None,
        limit: int = 10,
    ) -> SearchResult:
        """The ``limit`` best documents for ``query``, best first (ties by rowid: see
        :meth:`open`), from these partitions, and these collections and scopes when given
        (``None``: all). Isolated documents come back only when ``partitions`` names
        ``"isolated"``."""
        if limit < 1:
            raise InputError(f"limit must be at least 1, not {limit}", field="limit")
        where, args = "", list[str]()
        for column, values in (("collection", collections), ("scope", scopes)):
            if values is not None:
                where, args = f"{where} AND d.{column} IN ({marks(values)})", [*args, *values]
        within = "" if collections is None else f" in {', '.join(collections) or 'no collection'}"
        wanted = tuple(dict.fromkeys(parse_partition(p) for p in partitions))
        return await self._call(search_rows, query, wanted, (where, args, limit), within)

    async def sync_files(
        self,
        root: str | Path,
        collection: str,
        partition: Partition | str = Partition.OPEN,
        *,
        scope: str = "",
        pattern: str = "*.md",
    ) -> SyncReport:
        """Bring ``collection`` in line with the files under ``root`` whose names match
        ``pattern``: files whose mtime, size, partition or scope changed are read, those whose
        bytes changed are segmented again, files gone leave the index. Hidden paths and symlinks
        are skipped. Doc ids are ``<collection>:<path under root>``; the folder is remembered
        for rebuilds."""
        spec = Folder(
            str(Path(root).resolve()), collection, parse_partition(partition), scope, pattern
        )
        plan = await self._call(scan, spec)  # reads and segments outside the write transaction
        return await self._call(_write, _apply, spec, plan)

    async def sync_partition(
        self, partition: Partition | str, folders: Sequence[tuple[str | Path, str, str]]
    ) -> None:
        """Make ``partition`` hold exactly ``folders`` (root, collection, scope: each synced as
        :meth:`sync_files` does, ``*.md``), every other collection of it dropped; in two thread
        hops and one write transaction, however many folders."""
        part = parse_partition(partition)
        specs = [
            Folder(str(Path(r).resolve()), name, part, scope, "*.md") for r, name, scope in folders
        ]
        plans = await self._call(lambda conn: [scan(conn, spec) for spec in specs])
        await self._call(_write, _apply_all, specs, plans, part)

    async def rebuild(self) -> int:
        """Segment every document again from its stored text, then sync the remembered folders
        (files changed or gone since are picked up). Returns how many documents it holds."""
        return await self._call(_write, _rebuild)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    return fn(self._conn, *args)
                except sqlite3.Error as exc:
                    raise StorageError(f"knowledge index {self.path}: {exc}; {_FIX}") from exc

        return await asyncio.to_thread(locked)


def _connect(path: Path) -> sqlite3.Connection:
    try:
        if str(path) != IN_MEMORY:
            path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: no implicit transactions; writes say BEGIN IMMEDIATE themselves.
        conn = sqlite3.connect(path, BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise StorageError(f"cannot open knowledge index {path}: {exc}") from exc
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # "file is not a database" surfaces here
        exists = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        if exists and (schema := _meta(conn, "schema")) != SCHEMA_VERSION:
            raise sqlite3.DatabaseError(f"it has schema {schema}, this code reads {SCHEMA_VERSION}")
        # One script, one transaction: two processes creating the file at once both succeed.
        meta = f"INSERT OR IGNORE INTO meta VALUES ('schema', '{SCHEMA_VERSION}');"
        conn.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} {meta} COMMIT;")
    except sqlite3.Error as exc:
        conn.close()
        raise StorageError(f"{path} is not a usable knowledge index ({exc}); {_FIX}") from exc
    return conn


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _write(conn: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
    # IMMEDIATE takes the write lock up front: a deferred transaction that reads, then writes,
    # can fail at the upgrade with SQLITE_BUSY, which the busy timeout does not retry.
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn, *args)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def _store(conn: sqlite3.Connection, doc: Document, tokens: list[str] | None) -> bool:
    """Write one document; ``False`` when only its stat is refreshed: its content and metadata
    are what is stored, or ``tokens`` is ``None`` (the stored words are right)."""
    sql = "SELECT id, collection, partition, scope, source, title, content_hash FROM docs"
    row = conn.execute(f"{sql} WHERE doc_id = ?", (doc.doc_id,)).fetchone()
    same = (doc.collection, doc.partition, doc.scope, doc.source, doc.title, doc.content_hash)
    stat = (doc.mtime_ns, doc.size, time.time())
    if row is not None and (tokens is None or tuple(row[1:]) == same):
        sql = "UPDATE docs SET mtime_ns = ?, size = ?, indexed_at = ? WHERE id = ?"
        conn.execute(sql, (*stat, row[0]))
        return False
    if row is not None:
        _drop(conn, row[0], row[2])
    rowid = row[0] if row is not None else _new_id(conn, doc.doc_id)
    values = (rowid, doc.doc_id, *same[:5], doc.text, doc.content_hash, *stat)
    sql = f"INSERT INTO docs (id, {_COLUMNS}, indexed_at) VALUES ({marks(values)})"
    rowid = conn.execute(sql, values).lastrowid  # a replaced document keeps its id
    words = " ".join(index_tokens(doc.title, doc.text) if tokens is None else tokens)
    sql = f"INSERT INTO {TABLES[doc.partition]} (rowid, tokens) VALUES (?, ?)"
    conn.execute(sql, (rowid, words))
    return True


def _fix_ids(conn: sqlite3.Connection) -> None:
    if conn.execute("SELECT count(*) FROM docs").fetchone()[0] == 0:
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('ids', 'doc_id')")


def _new_id(conn: sqlite3.Connection, doc_id: str) -> int | None:
    """A new document's rowid: the next one (None), or one derived from ``doc_id``."""
    if _meta(conn, "ids") != "doc_id":
        return None
    digest = hashlib.sha256(doc_id.encode()).digest()
    rowid = int.from_bytes(digest[:7], "big")  # 56 bits: positive, as rowids must be
    while conn.execute("SELECT 1 FROM docs WHERE id = ?", (rowid,)).fetchone():
        rowid += 1  # a collision (one in 2**56): the next free id
    return rowid


def _drop(conn: sqlite3.Connection, rowid: int, partition: str) -> None:
    conn.execute(f"DELETE FROM {TABLES[Partition(partition)]} WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM docs WHERE id = ?", (rowid,))


def _apply_all(
    conn: sqlite3.Connection, specs: list[Folder], plans: list[Plan], part: Partition
) -> None:
    for spec, plan in zip(specs, plans, strict=True):
        _apply(conn, spec, plan)
    names = tuple(spec.collection for spec in specs)
    where, args = f"partition = ? AND collection NOT IN ({marks(names)})", (part.value, *names)
    conn.execute(f"DELETE FROM roots WHERE {where}", args)
    _remove(conn, where, *args)


def _remove(conn: sqlite3.Connection, where: str, *args: Any) -> tuple[str, ...]:
    rows = conn.execute(f"SELECT id, partition, doc_id FROM docs WHERE {where}", args).fetchall()
    for rowid, partition, _ in rows:
        _drop(conn, rowid, partition)
    return tuple(doc_id for _, _, doc_id in rows)


def _apply(conn: sqlite3.Connection, spec: Folder, plan: Plan) -> SyncReport:
    writes, unchanged, skipped, seen = plan
    added, updated, unchanged = list[str](), list[str](), list(unchanged)
    for doc, tokens in writes:
        existed = conn.execute("SELECT 1 FROM docs WHERE doc_id = ?", (doc.doc_id,)).fetchone()
        (unchanged if not _store(conn, doc, tokens) else updated if existed else added).append(
            doc.doc_id
        )
    gone = [r for r in spec.stored(conn, "id, partition, source, doc_id") if r[2] not in seen]
    for rowid, partition, _, _ in gone:
        _drop(conn, rowid, partition)
    row = (spec.root, spec.collection, spec.partition.value, spec.scope, spec.pattern)
    conn.execute("INSERT OR REPLACE INTO roots VALUES (?, ?, ?, ?, ?)", row)
    removed = tuple(r[3] for r in gone)
    return SyncReport(tuple(added), tuple(updated), removed, tuple(unchanged), tuple(skipped))


def _rebuild(conn: sqlite3.Connection) -> int:
    """Words again for every stored document, then a sync of every remembered folder, in one
    transaction (readers see the old index until it commits, other writers wait)."""
    for table in TABLES.values():
        conn.execute(f"DELETE FROM {table}")
    for rowid, part, title, text in conn.execute(
        "SELECT id, partition, title, text FROM docs"
    ).fetchall():
        sql = f"INSERT INTO {TABLES[Partition(part)]} (rowid, tokens) VALUES (?, ?)"
        conn.execute(sql, (rowid, " ".join(index_tokens(title, text))))
    for root in conn.execute("SELECT * FROM roots").fetchall():
        spec = Folder(root[0], root[1], Partition(root[2]), *root[3:])
        _apply(conn, spec, scan(conn, spec))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('tokenizer', ?)", (tokenizer_version(),))
    return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
