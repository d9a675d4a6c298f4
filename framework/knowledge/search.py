"""Search over the knowledge layers, for an employee or for the person running the CLI.

What a search may see is decided here, once, for the tool and the CLI alike:

=================  ======================================================================
who asks            collections searched
=================  ======================================================================
employee ``pm``     ``employee:pm`` (its topic files), ``shared``, ``journals:pm``
the CLI (no one)    every employee's topics and journals, and ``shared``
``isolated``        the isolated library partition only: for employees ``knowledge.yaml``
                    lists as readers, and the CLI; never mixed with an open search
=================  ======================================================================

One query searches one partition, so an isolated document can never come back from an open
search, whatever the query. Before each search the collections it reads are synced with their
folders (mtime and size first, content hash second), so a fact written a moment ago, by a
session or by hand, is found at once; unchanged files cost a ``stat``. With
``whole_partition`` (each replica's own index) every collection of the partition is synced and
nothing else is kept in it, so the scores depend on the files alone (see
:mod:`framework.knowledge.base`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from framework.data_folder import DataFolder
from framework.errors import InputError
from framework.names import is_name

from .documents import Partition, SearchResult, parse_partition
from .index import KnowledgeIndex
from .library import Library, NotEntitledError

__all__ = ["Collection", "Shelves", "collections_for", "search"]


class Shelves(Protocol):
    """What a search reads (:class:`~framework.knowledge.base.KnowledgeBase` fits): the
    library's partitions, and the data folder's topic and journal folders."""

    @property
    def library(self) -> Library: ...

    @property
    def folder(self) -> DataFolder: ...


@dataclass(frozen=True, slots=True)
class Collection:
    """One folder of markdown files as the index knows it."""

    name: str
    root: Path
    partition: Partition
    scope: str = ""


def collections_for(
    kb: Shelves, employee: str | None, partition: Partition | str = Partition.OPEN
) -> list[Collection]:
    """The collections a search by ``employee`` (None: the CLI's operator) may read in
    ``partition``; :class:`~framework.knowledge.library.NotEntitledError` for an isolated
    search by an employee ``knowledge.yaml`` does not list as a reader."""
    part = parse_partition(partition)
    if part is Partition.ISOLATED:
        if employee is not None and "isolated" not in kb.library.reader(employee):
            raise NotEntitledError(
                f"{employee} may not search the isolated library partition",
                field="partition",
                fix=f"add {employee} to isolated.readers in knowledge.yaml, or search 'open'",
            )
        return [Collection("isolated", kb.library.path("isolated"), Partition.ISOLATED)]
    employees = [employee] if employee is not None else _employees(kb)
    found = [Collection("shared", kb.library.path("shared"), Partition.OPEN)]
    for name in employees:
        found.append(Collection(f"employee:{name}", kb.folder.topics_dir(name), Partition.OPEN))
        found.append(
            Collection(f"journals:{name}", kb.folder.journals_dir / name, Partition.OPEN, name)
        )
    return found


async def sync(index: KnowledgeIndex, collections: list[Collection]) -> None:
    """Bring each collection in line with its folder (a missing folder: nothing in it)."""
    for c in collections:
        await index.sync_files(c.root, c.name, c.partition, scope=c.scope)


async def search(
    kb: Shelves,
    index: KnowledgeIndex,
    query: str,
    *,
    employee: str | None = None,
    partition: Partition | str = Partition.OPEN,
    limit: int = 5,
    whole_partition: bool = False,
) -> SearchResult:
    """The ``limit`` best documents for ``query`` that ``employee`` may read (see the module
    doc), after syncing them with their files (``whole_partition``: every collection of the
    partition). A result with no hits says why (``no_match_reason``): no searchable words, or
    no document holds them."""
    if not query.strip():
        raise InputError("the query is empty", field="query", fix="say what to look for")
    collections = collections_for(kb, employee, partition)
    if whole_partition:
        # BM25 scores with the whole partition's statistics: an employee's search is scored
        # the same on a replica that never synced another employee's folder as on one that
        # did (and kept documents since deleted) only when both hold exactly the files.
        every = collections_for(kb, None, partition)
        await index.sync_partition(partition, [(c.root, c.name, c.scope) for c in every])
    else:
        await sync(index, collections)
    return await index.search(
        query,
        collections=[c.name for c in collections],
        partitions=[parse_partition(partition)],
        limit=limit,
    )


def _employees(kb: Shelves) -> list[str]:
    """Everyone with topic files or journals on disk, sorted."""
    names: set[str] = set()
    for root in (kb.folder.knowledge_dir, kb.folder.journals_dir):
        if root.is_dir():
            names.update(p.name for p in root.iterdir() if p.is_dir() and is_name(p.name))
    return sorted(names)
