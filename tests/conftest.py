"""Shared fixtures: a fresh data folder per test, the repo as the project, no network."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cli_in_process import Cli, in_process_cli
from paths import ROOT
from stub_openai import StubOpenAI

from framework import Settings, Staffroom


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # Backoff is real in tests, just short: retries are exercised, not waited out.
    return Settings(
        data_dir=tmp_path / "data", project_dir=ROOT, allow_network=False, model_backoff=0.01
    )


@pytest.fixture
async def staff(settings: Settings) -> AsyncIterator[Staffroom]:
    async with await Staffroom.open(settings=settings) as opened:
        yield opened


@pytest.fixture
def stub_openai() -> Iterator[StubOpenAI]:
    """A recording OpenAI-compatible stub server on 127.0.0.1 (see tests/stub_openai.py)."""
    with StubOpenAI() as stub:
        yield stub


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """``cli("run", "tech-article", ...)``: the ``staffroom`` command in this process, as a
    person sees it (see tests/cli_in_process.py)."""
    return in_process_cli(capsys, monkeypatch, ROOT)
