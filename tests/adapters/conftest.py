"""Adapter fixtures: a project with a free-chat scenario and the fake platform."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from adapter_harness import make_project
from fake_platform import FakePlatform


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The shipped employees plus a free-chat scenario (no SOP, max_turns 3)."""
    return make_project(tmp_path)


@pytest.fixture
def fake() -> Iterator[FakePlatform]:
    """A recording fake of Slack's and Feishu's APIs on 127.0.0.1."""
    with FakePlatform() as platform:
        yield platform
