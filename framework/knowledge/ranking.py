"""How the knowledge index answers a query: which words count, and BM25 by FTS5.

A query becomes quoted words (``"部署" OR "k8s"``), never FTS5 syntax, and reads only the FTS5
tables of the partitions it names (``docs.partition`` is checked again on the way out). Words
in :data:`COMMON_SHARE` of a partition or more are left out when rarer ones exist: their idf is
floored, so they change no ranking, yet each costs a pass over a posting list as long as the
partition (~1 µs a row). If the rarer words then match nothing, all words are searched.

Equal scores go by rowid: the order documents were first indexed in, or, in an index whose
rowids are derived from the doc ids (``KnowledgeIndex.open(..., fixed_ids=True)``: each
replica's own), the same order in every index holding the same documents.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from .documents import Hit, Partition, SearchResult
from .tokens import snippet, tokenize

__all__ = ["COMMON_SHARE", "NO_WORDS", "TABLES", "marks", "search_rows"]

COMMON_SHARE = 0.5
"""Words in at least this share of a partition's documents are left out when rarer ones exist."""
NO_WORDS = "the query has no searchable words after stop words"
TABLES = {Partition.OPEN: "fts_open", Partition.ISOLATED: "fts_isolated"}
"""The FTS5 table of each partition."""

_Filters = tuple[str, list[str], int]  # extra WHERE on docs (d.), its arguments, the limit


def marks(values: Sequence[object]) -> str:
    """``?, ?, ?``: one placeholder per value."""
    return ", ".join("?" * len(values))


def search_rows(
    conn: sqlite3.Connection,
    query: str,
    partitions: tuple[Partition, ...],
    filters: _Filters,
    within: str,
) -> SearchResult:
    """The best ``filters[2]`` documents for ``query`` in ``partitions``, best first.
    ``within`` names the collections for the no-match reason."""
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
    sql += f" ({marks(ids)}) AND partition IN ({marks(parts)})"  # the partitions, checked again
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
    table = TABLES[part]  # FTS5's docsize table has one small row a document: cheap to count
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
    """The best ``limit`` (score, rowid) of ``part`` (ties by rowid)."""
    t = TABLES[part]  # only the tables of the partitions asked for are ever read
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
