"""One data folder's knowledge layers behind one handle (the composition the runtime, the CLI
and tests share). Where each layer lives is :class:`~framework.data_folder.DataFolder`'s to say.

The search index is derived from the files, and kept one of two ways:

- **In the data folder** (the default): ``index/knowledge.sqlite``, shared by the processes of
  one machine (SQLite's own locks and WAL), synced before each search with the folders that
  search reads.
- **In this process's memory** (``own_index``: replicas on a database): SQLite's locks and
  WAL's shared memory do not work across machines on a network folder, so each replica keeps
  its own, built from the files on its first search. BM25 scores with the statistics of the
  whole partition (how many documents, how long, how many hold a word), so before each search
  the whole partition is brought in line with the files and nothing else stays in it, and
  documents' rowids (which order equal scores) derive from their doc ids: replicas that see
  the same files give the same hits, scores and order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import date
from pathlib import Path

from framework.data_folder import DataFolder
from framework.file_locks import FileLocks, LocalFileLocks
from framework.knowledge.documents import Partition, SearchResult
from framework.knowledge.index import IN_MEMORY, KnowledgeIndex
from framework.knowledge.journal import Journal
from framework.knowledge.library import Library
from framework.knowledge.search import search
from framework.knowledge.topics import TopicStore
from framework.knowledge.trackers import Trackers
from framework.specs.knowledge_file import KnowledgeConfig

DEFAULT_REFLECTION = "回顾最近的日志和知识：哪些做法有效，哪些该做没做，下一步改进什么"
"""The standing self-reflection every employee with a journal gets (seed 001: 定期反思)."""


class KnowledgeBase:
    """The knowledge layers of one data folder, configured by a project's ``knowledge.yaml``.

    All file I/O blocks: async callers run it in a worker thread. ``locks``: how the writers of
    one file exclude each other (default: ``<file>.lock``); ``own_index``: keep the search index
    in this process's memory, not in the data folder (see the module doc).
    """

    def __init__(
        self,
        data_dir: Path,
        config: KnowledgeConfig | None = None,
        *,
        today: Callable[[], date] = date.today,
        locks: FileLocks | None = None,
        own_index: bool = False,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = config or KnowledgeConfig()
        self.today = today
        self.locks = locks or LocalFileLocks()
        self.own_index = own_index
        self.folder = DataFolder(self.data_dir)
        self.journal = Journal(self.folder.journals_dir, locks=self.locks)
        self.trackers = Trackers(self.folder.trackers_dir, today=today, locks=self.locks)
        self.library = Library.from_config(
            self.folder.library_dir, self.config, today=today, locks=self.locks
        )
        self._topics: dict[str, TopicStore] = {}
        self._index: KnowledgeIndex | None = None
        self._index_lock = asyncio.Lock()

    def topics(self, employee: str) -> TopicStore:
        """``employee``'s private topic files (``knowledge/{employee}/``)."""
        if employee not in self._topics:
            self._topics[employee] = TopicStore(
                self.folder.topics_dir(employee),
                categories=self.config.categories,
                today=self.today,
                locks=self.locks,
            )
        return self._topics[employee]

    @property
    def index_path(self) -> Path:
        """The search index's SQLite file (derived: rebuilt from the files when lost); unused
        with ``own_index``."""
        return self.folder.knowledge_index

    @property
    def index_built(self) -> bool:
        """Whether a search index exists to keep in line (else the next search builds one)."""
        return self._index is not None if self.own_index else self.index_path.exists()

    def ensure_reflection(self, employee: str) -> None:
        """Give ``employee`` the standing reflection trigger (:data:`DEFAULT_REFLECTION`, at
        ``knowledge.yaml``'s interval) unless it has an open one. Idempotent."""
        if not any(r.is_open for r in self.trackers.reflections(employee)):
            self.trackers.add_reflection(
                employee,
                DEFAULT_REFLECTION,
                interval=self.config.reflection.interval,
                source="default",
            )

    async def index(self) -> KnowledgeIndex:
        """The search index, opened on first use (created, or rebuilt, from the files)."""
        async with self._index_lock:
            if self._index is None and self.own_index:
                self._index = await KnowledgeIndex.open(IN_MEMORY, fixed_ids=True)
            elif self._index is None:
                self.index_path.parent.mkdir(parents=True, exist_ok=True)
                self._index = await KnowledgeIndex.open(self.index_path)
            return self._index

    async def search(
        self,
        query: str,
        *,
        employee: str | None = None,
        partition: Partition | str = Partition.OPEN,
        limit: int = 5,
    ) -> SearchResult:
        """What ``employee`` (None: the operator) may find for ``query`` in one partition,
        the files synced first (see :mod:`framework.knowledge.search`)."""
        index = await self.index()
        return await search(
            self,
            index,
            query,
            employee=employee,
            partition=partition,
            limit=limit,
            whole_partition=self.own_index,
        )

    async def close(self) -> None:
        """Close the search index if it was opened."""
        async with self._index_lock:
            if self._index is not None:
                await self._index.close()
                self._index = None
