"""Shared fixtures: a fresh data folder per test, the repo as the project, no network."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from framework import Settings, Staffroom

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path / "data", project_dir=ROOT, allow_network=False)


@pytest.fixture
async def staff(settings: Settings) -> AsyncIterator[Staffroom]:
    async with await Staffroom.open(settings=settings) as opened:
        yield opened
