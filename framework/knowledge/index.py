"""The knowledge index: BM25 over topic files, the shared library, the isolated partition, archives.

``docs`` holds each document and the content hash / mtime / size it was indexed at; each
partition has an FTS5 table of pre-segmented words (:func:`index_tokens`, space-joined: the
``ascii`` tokenizer only splits on spaces, never segments Chinese). Ranking is FTS5's ``bm25()``
(k1 1.2, b 0.75, idf ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6), as rank_bm25 computes it
with that floor (``tests/knowledge/test_bm25_agreement.py``). Why it is built this way:

* Isolation is structural: a search reads only the FTS5 tables of the partitions it names and
  checks ``docs.partition`` again; isolated documents do not even shift open scores. Query
  text becomes quoted words (``"部署" OR "k8s"``), never FTS5 syntax.
* Words in half a partition or more are left out of a query with rarer words: their idf is
  floored, so they change no ranking, yet each costs a pass over a posting list as long as the
  partition (~1 µs a row). If the rarer words then match nothing, all words are searched.
* ``sqlite3`` in a worker thread (``asyncio.to_thread``), not aiosqlite: an operation (jieba,
  which is CPU work, then statements and commit) is one hop; aiosqlite makes each statement a
  hop and leaves jieba on the event loop. WAL and a busy timeout let processes share the file.
* Derived data: a broken index is deleted and rebuilt from the files, never repaired.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self, TypeVar

from framework.errors import InputError, StorageError

from .documents import (
    Document,
    Hit,
    Partition,
    SearchResult,
    SyncReport,
    document_parts,
    index_tokens,
    parse_partition,
)
from .tokens import snippet, tokenize, tokenizer_version

__all__ = ["COMMON_SHARE", "NO_WORDS", "KnowledgeIndex"]

T = TypeVar("T")
SCHEMA_VERSION = "1"
BUSY_TIMEOUT_S = 30.0  # how long a write waits for another process's transaction
COMMON_SHARE = 0.5
"""Words in at least this share of a partition's documents are left out when rarer ones exist."""
NO_WORDS = "the query has no searchable words after stop words"
_FIX = "the index holds only what the files hold: delete it (and its -wal, -shm), then sync again"


_TABLES = {Partition.OPEN: "fts_open", Partition.ISOLATED: "fts_isolated"}
_COLUMNS = "doc_id, collection, partition, scope, source, title, text, content_hash, mtime_ns, size"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE,
    collection TEXT NOT NULL, partition TEXT NOT NULL CHECK (partition IN ('open', 'isolated')),
    scope TEXT NOT NULL, source TEXT NOT NULL, title TEXT NOT NULL, text TEXT NOT NULL,
    content_hash TEXT NOT NULL, mtime_ns INTEGER, size INTEGER, indexed_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS docs_source ON docs (source);
CREATE TABLE IF NOT EXISTS roots (root TEXT, collection TEXT, partition TEXT, scope TEXT,
    pattern TEXT, PRIMARY KEY (root, collection));
""" + "".join(
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {t} USING fts5(tokens, tokenize='ascii');"
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {t}_vocab USING fts5vocab({t}, 'row');"
    for t in _TABLES.values()
)


class KnowledgeIndex:
    """Async BM25 search over documents and folders of markdown files (see the module doc)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        """Wrap an open, prepared connection; use :meth:`open` instead."""
        self._conn = conn
        self._lock = threading.Lock()  # one connection: calls from worker threads take turns
        self.path = path

    @classmethod
    async def open(cls, path: str | Path) -> Self:
        """Open (creating if needed) the index file at ``path``; rebuild it if it was segmented
        by other rules. :class:`StorageError`, with the fix, if it is not a usable index."""
        index = cls(await asyncio.to_thread(_connect, Path(path)), Path(path))
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
        """The ``limit`` best documents for ``query``, best first (ties: first indexed first),
        from these partitions, and these collections and scopes when given (``None``: all).
        Isolated documents come back only when ``partitions`` names ``"isolated"``."""
        if limit < 1:
            raise InputError(f"limit must be at least 1, not {limit}", field="limit")
        where, args = "", list[str]()
        for column, values in (("collection", collections), ("scope", scopes)):
            if values is not None:
                where, args = f"{where} AND d.{column} IN ({_marks(values)})", [*args, *values]
        within = "" if collections is None else f" in {', '.join(collections) or 'no collection'}"
        wanted = tuple(dict.fromkeys(parse_partition(p) for p in partitions))
        return await self._call(_search, query, wanted, (where, args, limit), within)

    async def sync_files(
        self,
        root: str | Path,
        collection: str,
        partition: Partition | str = Partition.OPEN,
        *,
        scope: str = "",
        pattern: str = "*.md",
    ) -> SyncReport:
        """Bring ``collection`` in line with the files under ``root`` matching ``pattern``:
        files whose mtime, size, partition or scope changed are read, those whose bytes changed
        are segmented again, files gone leave the index. Hidden paths and symlinks are skipped.
        Doc ids are ``<collection>:<path under root>``; the folder is remembered for rebuilds."""
        spec = _Root(
            str(Path(root).resolve()), collection, parse_partition(partition), scope, pattern
        )
        plan = await self._call(_plan, spec)  # reads and segments outside the write transaction
        return await self._call(_write, _apply, spec, plan)

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


@dataclass(frozen=True)
class _Root:
    root: str
    collection: str
    partition: Partition
    scope: str
    pattern: str

    def stored(self, conn: sqlite3.Connection, columns: str) -> list[Any]:
        prefix = self.root.rstrip(os.sep) + os.sep
        sql = f"SELECT {columns} FROM docs WHERE collection = ? AND substr(source, 1, ?) = ?"
        return conn.execute(sql, (self.collection, len(prefix), prefix)).fetchall()


def _marks(values: Sequence[object]) -> str:
    return ", ".join("?" * len(values))


def _connect(path: Path) -> sqlite3.Connection:
    try:
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
    values = (row and row[0], doc.doc_id, *same[:5], doc.text, doc.content_hash, *stat)
    sql = f"INSERT INTO docs (id, {_COLUMNS}, indexed_at) VALUES ({_marks(values)})"
    rowid = conn.execute(sql, values).lastrowid  # a replaced document keeps its id
    words = " ".join(index_tokens(doc.title, doc.text) if tokens is None else tokens)
    sql = f"INSERT INTO {_TABLES[doc.partition]} (rowid, tokens) VALUES (?, ?)"
    conn.execute(sql, (rowid, words))
    return True


def _drop(conn: sqlite3.Connection, rowid: int, partition: str) -> None:
    conn.execute(f"DELETE FROM {_TABLES[Partition(partition)]} WHERE rowid = ?", (rowid,))
    conn.execute("DELETE FROM docs WHERE id = ?", (rowid,))


def _remove(conn: sqlite3.Connection, where: str, *args: Any) -> tuple[str, ...]:
    rows = conn.execute(f"SELECT id, partition, doc_id FROM docs WHERE {where}", args).fetchall()
    for rowid, partition, _ in rows:
        _drop(conn, rowid, partition)
    return tuple(doc_id for _, _, doc_id in rows)


def _search(
    conn: sqlite3.Connection,
    query: str,
    partitions: tuple[Partition, ...],
    filters: tuple[str, list[str], int],
    within: str,
) -> SearchResult:
    terms = tuple(dict.fromkeys(tokenize(query)))  # here: one thread hop for the whole search
    if not terms:
        return SearchResult((), NO_WORDS)
    scored: list[tuple[float, int]] = []
    ignored: dict[str, None] = {}
    for part in partitions:
        kept = _selective(conn, part, terms)
        rows = _match(conn, part, kept, *filters)
        if not rows and kept != terms:  # the rarer words miss here: let the common ones count
            kept, rows = terms, _match(conn, part, terms, *filters)
        ignored.update(dict.fromkeys(t for t in terms if t not in kept))
        scored += rows
    scored = sorted(scored)[: filters[2]]  # (bm25, id): FTS5's bm25 is negated, best lowest
    ids, parts = [i for _, i in scored], [p.value for p in partitions]
    sql = "SELECT id, doc_id, collection, partition, source, title, text FROM docs WHERE id IN"
    sql += f" ({_marks(ids)}) AND partition IN ({_marks(parts)})"  # the partitions, checked again
    docs = {r[0]: r[1:] for r in conn.execute(sql, (*ids, *parts))}
    found = [(-bm25, docs[i]) for bm25, i in scored if i in docs]
    hits = tuple(
        Hit(d[0], d[1], Partition(d[2]), d[3], d[4], score, snippet(d[5], terms))
        for score, d in found
    )
    if hits:
        return SearchResult(hits, None, terms, tuple(ignored))
    return SearchResult((), f"no document{within} contains any of: {', '.join(terms)}", terms)


def _selective(
    conn: sqlite3.Connection, part: Partition, terms: tuple[str, ...]
) -> tuple[str, ...]:
    """``terms`` without those in :data:`COMMON_SHARE` of the partition or more, if a rarer one
    is there at all."""
    if len(terms) < 2:
        return terms
    table = _TABLES[part]  # FTS5's docsize table has one small row a document: cheap to count
    (total,) = conn.execute(f"SELECT count(*) FROM {table}_docsize").fetchone()
    lookup = f"SELECT doc FROM {table}_vocab WHERE term = ?"
    df = {t: (conn.execute(lookup, (t,)).fetchone() or (0,))[0] for t in terms}
    kept = tuple(t for t in terms if df[t] < COMMON_SHARE * total)
    return kept if any(df[t] for t in kept) else terms


def _match(
    conn: sqlite3.Connection,
    part: Partition,
    terms: tuple[str, ...],
    where: str,
    args: list[str],
    limit: int,
) -> list[tuple[float, int]]:
    t = _TABLES[part]  # only the tables of the partitions asked for are ever read
    # Every word quoted (inner quotes doubled): what a user typed is never FTS5 syntax.
    match = " OR ".join('"' + word.replace('"', '""') + '"' for word in terms)
    if not where:  # no docs row needed (a join costs ~1 µs a matching row)
        sql = f"SELECT bm25({t}) AS s, rowid FROM {t} WHERE {t} MATCH ? ORDER BY s, rowid LIMIT ?"
        return conn.execute(sql, (match, limit)).fetchall()
    sql = (
        f"SELECT bm25({t}) AS s, d.id FROM {t} JOIN docs AS d ON d.id = {t}.rowid"
        f" WHERE {t} MATCH ? AND d.partition = ?{where} ORDER BY s, d.id LIMIT ?"
    )
    return conn.execute(sql, (match, part.value, *args, limit)).fetchall()


_Plan = tuple[list[tuple[Document, list[str] | None]], list[str], list[str], set[str]]


def _plan(conn: sqlite3.Connection, spec: _Root) -> _Plan:
    """Writes (words only for changed bytes), unchanged doc ids, skipped files, files seen."""
    columns = "source, doc_id, mtime_ns, size, partition, scope, content_hash"
    stored = {r[0]: r[1:] for r in spec.stored(conn, columns)}
    root, writes, unchanged, skipped, seen = Path(spec.root), [], [], [], set()
    for path in sorted(root.rglob(spec.pattern)):
        rel = path.relative_to(root)
        if path.is_symlink() or not path.is_file() or any(p.startswith(".") for p in rel.parts):
            continue
        seen.add(str(path))
        old = stored.get(str(path))
        try:
            st = path.stat()
            if old and old[1:5] == (st.st_mtime_ns, st.st_size, spec.partition, spec.scope):
                unchanged.append(old[0])
                continue
            raw = path.read_bytes()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(f"{path}: {exc}")
            continue
        title, text = document_parts(text, path.stem)  # front matter is no searchable text
        doc_id, digest = f"{spec.collection}:{rel.as_posix()}", hashlib.sha256(raw).hexdigest()
        meta = (spec.partition, spec.scope, str(path), title, digest, st.st_mtime_ns, st.st_size)
        same = old is not None and old[3:] == (spec.partition, spec.scope, digest)
        doc = Document(doc_id, spec.collection, text, *meta)
        writes.append((doc, None if same else index_tokens(title, text)))
    return writes, unchanged, skipped, seen


def _apply(conn: sqlite3.Connection, spec: _Root, plan: _Plan) -> SyncReport:
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
    for table in _TABLES.values():
        conn.execute(f"DELETE FROM {table}")
    for rowid, part, title, text in conn.execute(
        "SELECT id, partition, title, text FROM docs"
    ).fetchall():
        sql = f"INSERT INTO {_TABLES[Partition(part)]} (rowid, tokens) VALUES (?, ?)"
        conn.execute(sql, (rowid, " ".join(index_tokens(title, text))))
    for root in conn.execute("SELECT * FROM roots").fetchall():
        spec = _Root(root[0], root[1], Partition(root[2]), *root[3:])
        _apply(conn, spec, _plan(conn, spec))
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('tokenizer', ?)", (tokenizer_version(),))
    return int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
