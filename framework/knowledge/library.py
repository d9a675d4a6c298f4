"""Layer 5, the library: knowledge for every employee, and a partition kept apart.

``library/shared/`` and ``library/isolated/`` are two :class:`~.topics.TopicStore` trees
(``{category}/{slug}.md`` each). Every employee reads the shared one; the isolated one
(sensitive business data, customer details, internal strategy) is read only by the employees
``knowledge.yaml`` lists under ``isolated.readers``. Every read here takes the reader and
refuses the isolated partition to anyone else (:class:`NotEntitledError`), so a query that is
not entitled never sees it.

Knowledge reaches the library by :meth:`Library.promote`: a private topic's current entries
(or the ones the caller names) are copied into the same topic of a partition, with
``promoted_from`` and a dated change note recording where they came from. Promoting again adds
only what is new. Which knowledge is general enough is the caller's decision: an employee's
own heuristics stay in its topic files. Nothing crosses partitions by accident: isolated
knowledge never goes into the shared library, and writing into the isolated one takes
``into="isolated"`` from an entitled employee.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Literal, get_args

from framework.errors import InputError
from framework.file_locks import FileLocks, LocalFileLocks
from framework.knowledge.topic_file import Promotion, Topic
from framework.knowledge.topics import TopicChange, TopicStore
from framework.memory.similarity import normalize
from framework.names import check_name
from framework.specs.knowledge_file import DEFAULT_CATEGORIES, KnowledgeConfig

__all__ = ["PARTITIONS", "Library", "NotEntitledError", "Partition"]

Partition = Literal["shared", "isolated"]
PARTITIONS: tuple[Partition, ...] = get_args(Partition)


class NotEntitledError(InputError):
    """An employee asked for the isolated partition without being entitled to it."""


class Library:
    """The library under ``root`` (``library/``): ``shared/`` and ``isolated/``.

    ``isolated_readers`` are the employees entitled to the isolated partition (from
    ``knowledge.yaml``: :meth:`from_config`); ``locks``: how the writers of a partition's topic
    files exclude each other. All I/O blocks: call it from a worker thread.
    """

    def __init__(
        self,
        root: Path,
        *,
        isolated_readers: Iterable[str] = (),
        categories: Sequence[str] = DEFAULT_CATEGORIES,
        today: Callable[[], date] = date.today,
        locks: FileLocks | None = None,
    ) -> None:
        self.root = Path(root)
        self._readers = frozenset(isolated_readers)
        self._today = today
        self.locks = locks or LocalFileLocks()
        self._stores = {
            p: TopicStore(self.root / p, categories=categories, today=today, locks=self.locks)
            for p in PARTITIONS
        }

    @classmethod
    def from_config(
        cls,
        root: Path,
        config: KnowledgeConfig,
        *,
        today: Callable[[], date] = date.today,
        locks: FileLocks | None = None,
    ) -> Library:
        """A library with the readers and categories of a project's ``knowledge.yaml``."""
        return cls(
            root,
            isolated_readers=config.isolated.readers,
            categories=config.categories,
            today=today,
            locks=locks,
        )

    def reader(self, employee: str) -> tuple[Partition, ...]:
        """The partitions ``employee`` may read: ``shared``, and ``isolated`` if entitled."""
        entitled = check_name(employee, field="reader") in self._readers
        return PARTITIONS if entitled else ("shared",)

    def path(self, partition: Partition) -> Path:
        """Where a partition's files are (for an index that keeps the partition with each
        document; reading them is up to the index's own filter)."""
        return self._stores[_partition(partition)].root

    def store(self, reader: str, partition: Partition = "shared") -> TopicStore:
        """The partition's store, for ``reader`` (refused for isolated unless entitled).

        Admin writes go through it too (``library.store(by, "isolated").update(...)``).
        """
        if _partition(partition) not in self.reader(reader):
            raise NotEntitledError(
                f"{reader} may not read the isolated library partition",
                field="reader",
                fix=f"add {reader} to isolated.readers in knowledge.yaml, or use the shared "
                "library",
            )
        return self._stores[partition]

    def show(
        self, reader: str, topic: str, partition: Partition = "shared", category: str | None = None
    ) -> Topic:
        """One topic of the partition."""
        return self.store(reader, partition).show(topic, category)

    def current_entries(
        self, reader: str, topic: str, partition: Partition = "shared", category: str | None = None
    ) -> list[str]:
        """A topic's current entries (superseded ones left out)."""
        return self.store(reader, partition).current_entries(topic, category)

    def stale(
        self, reader: str, days: int, partition: Partition = "shared", today: date | None = None
    ) -> list[Topic]:
        """Topics of the partition not reviewed in ``days`` days."""
        return self.store(reader, partition).stale(days, today)

    def promote(
        self,
        source_store: TopicStore,
        topic: str,
        *,
        by: str,
        source: str,
        category: str | None = None,
        entries: Sequence[str] | None = None,
        into: Partition = "shared",
        note: str | None = None,
    ) -> TopicChange:
        """Copy a topic's current entries (or only ``entries``, which must be among them)
        into the same topic of partition ``into``; idempotent.

        ``source`` names where it came from (an employee id, ``knowledge/pm``) and ``by`` who
        promotes. Refused: isolated knowledge into the shared library, anything into
        isolated unless ``by`` is entitled, a store into itself.
        """
        by = check_name(by, field="by")
        target = self.store(by, _partition(into))  # isolated: only for an entitled `by`
        origin = source_store.root.resolve()
        isolated = self._stores["isolated"].root.resolve()
        if origin == target.root.resolve():
            raise InputError(
                f"{origin} is already the {into} library",
                field="source_store",
                fix="promote from an employee's topic files",
            )
        if into == "shared" and (origin == isolated or isolated in origin.parents):
            raise InputError(
                "isolated knowledge never goes into the shared library",
                field="into",
                fix="keep it in the isolated partition; write a shareable version by hand",
            )
        if not source.strip():
            raise InputError("source is empty", field="source", fix="name whose knowledge it is")
        found = source_store.show(topic, category)
        chosen = list(found.entries) if entries is None else _among(entries, found)
        if not chosen:
            raise InputError(
                f"topic {found.category}/{found.slug} has no current entries to promote",
                file=found.path,
                fix="add entries to the topic first",
            )
        where = f"{found.category}/{found.slug}"
        return target.update(
            found.slug,
            found.category,
            add=chosen,
            title=found.title,
            note=note or f"promoted from {source.strip()} ({where}) by {by}",
            promotion=Promotion(source=source.strip(), topic=where, by=by, date=self._today()),
        )

    # Defined last: below it, `list` in the class body would name this method, not the type.
    def list(self, reader: str, partition: Partition = "shared") -> list[Topic]:
        """Every topic of the partition."""
        return self.store(reader, partition).list()


def _partition(value: str) -> Partition:
    for partition in PARTITIONS:
        if value == partition:
            return partition
    raise InputError(
        f"unknown library partition {value!r}", field="partition", fix="use shared or isolated"
    )


def _among(entries: Sequence[str], topic: Topic) -> list[str]:
    """``entries`` as the topic writes them; each must be one of its current entries."""
    current = {normalize(entry): entry for entry in topic.entries}
    chosen = []
    for entry in [entries] if isinstance(entries, str) else entries:
        if normalize(entry) not in current:
            raise InputError(
                f"{entry!r} is not a current entry of {topic.category}/{topic.slug}",
                file=topic.path,
                field="entries",
                fix="promote only what the topic holds (superseded entries are not promoted)",
            )
        chosen.append(current[normalize(entry)])
    return chosen
