"""The viewer tests' server fixture (the harness is in viewer_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from viewer_harness import Server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(tmp_path)
    running.start()
    try:
        yield running
    finally:
        running.stop()
