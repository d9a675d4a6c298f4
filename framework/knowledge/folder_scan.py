"""What a sync of the knowledge index reads from a folder: which files, and which changed.

A file is read again when its mtime or size changed, or when it changed so shortly before it
was last read (:data:`RACY_S`) that a second change in the same timestamp tick, of the same
size, would not show (git's "racily clean" entries): the bytes' hash then decides whether its
words are segmented again. Everything here reads (the index's ``docs`` rows, the files); the
writes are :mod:`.index`'s, in one transaction after this, so segmenting never holds it.

This runs for every file of a partition before each search on a replica's own index, so it
deals in plain strings and one ``lstat`` a file: pathlib's per-path objects were its main cost.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import sqlite3
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .documents import Document, Partition, document_parts, index_tokens

__all__ = ["RACY_S", "Folder", "Plan", "listed", "scan"]

RACY_S = 10.0
"""A file changed this close before it was read is read again at the next sync. Also how far
the clocks of the file server and this machine may drift apart without a change going unseen."""


@dataclass(frozen=True)
class Folder:
    """One folder as a collection of the index: where, which collection, partition, scope."""

    root: str
    collection: str
    partition: Partition
    scope: str
    pattern: str

    def stored(self, conn: sqlite3.Connection, columns: str) -> list[Any]:
        """``columns`` of the index's documents from this folder, as this collection."""
        prefix = self.root.rstrip(os.sep) + os.sep
        sql = f"SELECT {columns} FROM docs WHERE collection = ? AND substr(source, 1, ?) = ?"
        return conn.execute(sql, (self.collection, len(prefix), prefix)).fetchall()


Plan = tuple[list[tuple[Document, list[str] | None]], list[str], list[str], set[str]]
"""What :func:`scan` found: documents to write (with their words when the bytes changed),
unchanged doc ids, files skipped (with why), every file seen."""


def scan(conn: sqlite3.Connection, spec: Folder) -> Plan:
    """Writes (words only for changed bytes), unchanged doc ids, skipped files, files seen."""
    columns = "source, doc_id, mtime_ns, size, partition, scope, content_hash, indexed_at"
    stored = {r[0]: r[1:] for r in spec.stored(conn, columns)}
    writes, unchanged, skipped, seen = [], [], [], set()
    cut = len(spec.root.rstrip(os.sep)) + len(os.sep)
    for name in listed(spec.root, spec.pattern):
        rel = name[cut:]
        try:
            st = os.lstat(name)  # a symlink is seen as one (and skipped), never followed
        except (FileNotFoundError, NotADirectoryError):
            continue  # gone since it was listed
        except OSError as exc:
            seen.add(name)
            skipped.append(f"{name}: {exc}")
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        seen.add(name)
        old = stored.get(name)
        seen_at = (st.st_mtime_ns, st.st_size, spec.partition, spec.scope)
        if old and old[1:5] == seen_at and old[6] - st.st_mtime_ns / 1e9 >= RACY_S:
            unchanged.append(old[0])
            continue
        try:
            raw = Path(name).read_bytes()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            skipped.append(f"{name}: {exc}")
            continue
        title, text = document_parts(text, Path(name).stem)  # front matter is not searched
        doc_id = f"{spec.collection}:{rel.replace(os.sep, '/')}"
        digest = hashlib.sha256(raw).hexdigest()
        meta = (spec.partition, spec.scope, name, title, digest, st.st_mtime_ns, st.st_size)
        same = old is not None and old[3:6] == (spec.partition, spec.scope, digest)
        doc = Document(doc_id, spec.collection, text, *meta)
        writes.append((doc, None if same else index_tokens(title, text)))
    return writes, unchanged, skipped, seen


def listed(root: str, pattern: str) -> list[str]:
    """Files under ``root`` whose names match ``pattern``, sorted as paths; hidden files and
    folders are left out and symlinked folders are not entered (as ``rglob`` would not)."""
    found: list[str] = []
    for folder, dirs, files in os.walk(root):  # a missing root: nothing
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [
            os.path.join(folder, f)
            for f in files
            if not f.startswith(".") and fnmatch.fnmatchcase(f, pattern)
        ]
    return sorted(found, key=lambda name: name.split(os.sep))
