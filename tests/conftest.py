"""Shared fixtures: a fresh data folder per test, the repo as the project, no network; the
CLI in-process (``cli``) and `staffroom serve` as real processes (``start_server``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from backend import BACKEND, backend_database, use_database
from cli_in_process import Cli, in_process_cli
from paths import ROOT
from pg_cluster import ThrowawayCluster
from serve_process import ServeProcess
from stub_openai import StubOpenAI

from framework import Settings, Staffroom


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the postgres backend, tests about the SQLite files themselves are not collected
    (deselected, so the run says how many, rather than skipped as if something were missing)."""
    if BACKEND != "postgres":
        return
    kept = [item for item in items if item.get_closest_marker("sqlite_only") is None]
    dropped = [item for item in items if item.get_closest_marker("sqlite_only") is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(autouse=True)
def backend(request: pytest.FixtureRequest) -> Iterator[None]:
    """On the postgres backend (``make test-pg``), a database of the test's own for every
    store, made when first asked for (tests/backend.py); on SQLite, nothing."""
    if BACKEND != "postgres":
        yield None
        return
    cluster: ThrowawayCluster = request.getfixturevalue("pg_cluster")
    use_database(cluster.new_database)
    try:
        yield None
    finally:
        use_database(None)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # Backoff is real in tests, just short: retries are exercised, not waited out.
    return Settings(
        data_dir=tmp_path / "data",
        project_dir=ROOT,
        allow_network=False,
        model_backoff=0.01,
        database=backend_database(),
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


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., ServeProcess]]:
    """``start_server(*args, data=, env=, cwd=)``: `staffroom serve ARGS` as a real process,
    ready (tests/serve_process.py); every server it started is stopped at the end of the
    test. ``data`` defaults to tmp_path/data."""
    started: list[ServeProcess] = []

    def start(
        *args: str, data: Path | None = None, env: dict[str, str] | None = None, cwd: Path = ROOT
    ) -> ServeProcess:
        log = tmp_path / f"serve-{len(started)}.log"
        server = ServeProcess(data or tmp_path / "data", log, list(args), env or {}, cwd)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[ThrowawayCluster]:
    """This worker's throwaway PostgreSQL 15 cluster (tests/pg_cluster.py)."""
    cluster = ThrowawayCluster()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def pg_url(pg_cluster: ThrowawayCluster) -> str:
    """The URL of an empty database of this test's own on the worker's cluster."""
    return pg_cluster.new_database()
