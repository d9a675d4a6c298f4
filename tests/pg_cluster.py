"""The throwaway PostgreSQL cluster of a test run: one per pytest worker, one database per test.

The cluster lives in a fresh temporary folder (``tempfile.mkdtemp``: the ``postgres`` user that
runs it when the tests run as root must reach it, and pytest's own tmp folders are private to
root), listens on 127.0.0.1 at a free port and is stopped when the worker ends. No cluster can
be started (no PostgreSQL installed): the test fails saying so, never skips (``make test``
installs Debian's ``postgresql`` when it is missing and it may).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

from framework.database.local_cluster import LocalCluster

_numbers = itertools.count(1)


class ThrowawayCluster:
    """A started :class:`LocalCluster` that hands out empty databases."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="staffroom-pg-"))
        self.cluster = LocalCluster(self.folder).start()

    def new_database(self) -> str:
        """The URL of a new, empty database of its own."""
        return self.cluster.create_database(f"t{os.getpid()}_{next(_numbers)}")

    def close(self) -> None:
        self.cluster.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)
