"""What the knowledge index stores and returns (plain data; the index is ``index.py``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum

import yaml

from framework.errors import InputError

from .tokens import tokenize

__all__ = [
    "Document",
    "Hit",
    "Partition",
    "SearchResult",
    "SyncReport",
    "document_parts",
    "index_tokens",
    "parse_partition",
]


class Partition(StrEnum):
    """Who may read a document: all it is shared with, or only queries entitled to it."""

    OPEN = "open"
    ISOLATED = "isolated"


@dataclass(frozen=True)
class Document:
    """One searchable document; ``doc_id`` is unique across the whole index."""

    doc_id: str
    collection: str
    """``employee:pm``, ``shared``, ``isolated``, ``journals:pm``, ..."""
    text: str
    partition: Partition = Partition.OPEN
    scope: str = ""
    source: str = ""
    """The file it came from, if any."""
    title: str = ""
    content_hash: str = ""
    """sha256 of the file's bytes; of title and text when left empty."""
    mtime_ns: int | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        """Check the partition and fill in the content hash."""
        object.__setattr__(self, "partition", parse_partition(self.partition))
        if not self.content_hash:
            digest = hashlib.sha256(f"{self.title}\0{self.text}".encode()).hexdigest()
            object.__setattr__(self, "content_hash", digest)


@dataclass(frozen=True)
class Hit:
    """One ranked document; ``score`` is BM25 (higher is better)."""

    doc_id: str
    collection: str
    partition: Partition
    source: str
    title: str
    score: float
    snippet: str


@dataclass(frozen=True)
class SearchResult:
    """Ranked hits, or why there are none."""

    hits: tuple[Hit, ...]
    no_match_reason: str | None
    """``None`` with hits; else why not: no searchable words, or no document has them."""
    terms: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    """Words left out as too common (in :data:`COMMON_SHARE` of a partition or more)."""


@dataclass(frozen=True)
class SyncReport:
    """What :meth:`KnowledgeIndex.sync_files` did, by doc id (``skipped``: file and reason)."""

    added: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


def parse_partition(value: str) -> Partition:
    """``value`` as a :class:`Partition`, or an :class:`InputError` naming the two there are."""
    try:
        return Partition(value)
    except ValueError:
        fix = "use 'open' or 'isolated'"
        raise InputError(f"unknown partition {value!r}", field="partition", fix=fix) from None


def index_tokens(title: str, text: str) -> list[str]:
    """The words a document is indexed under: its title's, then its text's, front matter left
    out (also of a document stored before it was: a rebuild segments it again)."""
    return tokenize(f"{title}\n{_front_matter(text)[1]}")


def document_parts(text: str, name: str) -> tuple[str, str]:
    """``(title, body)`` of a markdown file's ``text``. YAML front matter (a topic file's:
    dates, change notes, where entries came from) is not body text: a topic whose entries were
    all forgotten would still be found by it. The title is the front matter's ``title``, else
    the first ``# `` heading, else ``name``."""
    front, body = _front_matter(text)
    title = front.get("title")
    if isinstance(title, str) and title.strip():
        return title.strip(), body
    heading = next((ln[2:].strip() for ln in body.splitlines() if ln.startswith("# ")), None)
    return heading or name, body


def _front_matter(text: str) -> tuple[dict[object, object], str]:
    """The YAML mapping between a ``---`` first line and the next ``---`` line, and the text
    after it; ``({}, text)`` when there is none (a markdown rule above text is not one)."""
    if not text.removeprefix("\ufeff").startswith("---"):
        return {}, text
    lines = text.removeprefix("\ufeff").split("\n")
    end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() == "---"), 0)
    if lines[0].strip() != "---" or not end:
        return {}, text
    try:
        front = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError:
        return {}, text
    return (front, "\n".join(lines[end + 1 :])) if isinstance(front, dict) else ({}, text)
