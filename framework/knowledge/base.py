"""One data folder's knowledge layers behind one handle (the composition the runtime, the CLI
and tests share). Where each layer lives is :class:`~framework.data_folder.DataFolder`'s to say.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

from framework.data_folder import DataFolder
from framework.knowledge.journal import Journal
from framework.knowledge.library import Library
from framework.knowledge.topics import TopicStore
from framework.knowledge.trackers import Trackers
from framework.specs.knowledge_file import KnowledgeConfig


class KnowledgeBase:
    """The knowledge layers of one data folder, configured by a project's ``knowledge.yaml``.

    All file I/O blocks: async callers run it in a worker thread.
    """

    def __init__(
        self,
        data_dir: Path,
        config: KnowledgeConfig | None = None,
        *,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = config or KnowledgeConfig()
        self.today = today
        self.folder = DataFolder(self.data_dir)
        self.journal = Journal(self.folder.journals_dir)
        self.trackers = Trackers(self.folder.trackers_dir, today=today)
        self.library = Library.from_config(self.folder.library_dir, self.config, today=today)
        self._topics: dict[str, TopicStore] = {}

    def topics(self, employee: str) -> TopicStore:
        """``employee``'s private topic files (``knowledge/{employee}/``)."""
        if employee not in self._topics:
            self._topics[employee] = TopicStore(
                self.folder.topics_dir(employee),
                categories=self.config.categories,
                today=self.today,
            )
        return self._topics[employee]

    @property
    def index_path(self) -> Path:
        """The search index's SQLite file (derived: rebuilt from the files when lost)."""
        return self.folder.knowledge_index
