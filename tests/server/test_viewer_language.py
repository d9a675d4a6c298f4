"""The viewer's label language (``/viewer/settings.json``) is the project's, as the CLI's is:
``$STAFFROOM_LANGUAGE`` wins, else ``staffroom.yaml``'s ``language``, else null (the browser's).
Through the app in-process (httpx.ASGITransport), on the offline simulator."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from framework import Settings, Staffroom
from framework.serving.gateway import Gateway
from framework.surfaces.server.app import create_app
from framework.surfaces.server.config import load_config

Viewer = Callable[[Settings], AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def viewer() -> Viewer:
    """``async with viewer(settings) as client``: the app of ``settings``, in this process."""

    @asynccontextmanager
    async def opened(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
        async with await Staffroom.open(settings=settings) as staff:
            gateway = await Gateway.open(staff)
            app = create_app(gateway, load_config(None, no_auth=True))
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://127.0.0.1"
            ) as client:
                yield client
            await gateway.close()

    return opened


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder; the test process's own ``$STAFFROOM_LANGUAGE`` is unset."""
    monkeypatch.delenv("STAFFROOM_LANGUAGE", raising=False)
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def _settings(project: Path, tmp_path: Path) -> Settings:
    # As `staffroom serve` makes them: the environment read once, the options over it.
    return Settings.from_env(data_dir=tmp_path / "data", project_dir=project, allow_network=False)


async def _language(client: httpx.AsyncClient) -> Any:
    response = await client.get("/viewer/settings.json")
    assert response.status_code == 200, response.text
    return response.json()["language"]


async def test_the_viewer_follows_the_project_file(
    viewer: Viewer, project: Path, tmp_path: Path
) -> None:
    async with viewer(_settings(project, tmp_path)) as client:
        assert await _language(client) is None  # nothing set: each reader's browser decides
        (project / "staffroom.yaml").write_text("language: zh\n", encoding="utf-8")
        assert await _language(client) == "zh"  # read per page load: no restart needed
        (project / "staffroom.yaml").write_text("language: en-GB\n", encoding="utf-8")
        assert await _language(client) == "en"


async def test_the_environment_wins_over_the_project_file(
    viewer: Viewer, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "staffroom.yaml").write_text("language: zh\n", encoding="utf-8")
    monkeypatch.setenv("STAFFROOM_LANGUAGE", "en")
    async with viewer(_settings(project, tmp_path)) as client:
        assert await _language(client) == "en"


async def test_a_broken_project_file_is_named_not_ignored(
    viewer: Viewer, project: Path, tmp_path: Path
) -> None:
    async with viewer(_settings(project, tmp_path)) as client:
        (project / "staffroom.yaml").write_text("language: sk-secret-42\n", encoding="utf-8")
        response = await client.get("/viewer/settings.json")
    assert response.status_code == 400
    problem = response.json()["error"]
    # Named by file and line for the operator; the file's values are never echoed to the
    # page, which anyone may load.
    assert problem["message"] == "staffroom.yaml:1: the project file is not valid", problem
    assert "staffroom validate" in problem["fix"], problem
    assert "sk-secret-42" not in response.text and str(project) not in response.text


def test_serve_refuses_a_broken_project_file(tmp_path: Path, run_serve: Any) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "staffroom.yaml").write_text("language: klingon\n", encoding="utf-8")
    argv = ["--no-auth", "--port", "0", "--project", str(project)]
    done = run_serve(*argv, "--data-dir", str(tmp_path / "data"), env={"STAFFROOM_LANGUAGE": ""})
    assert done.code == 2, done.err
    assert "staffroom.yaml:1" in done.err and "klingon" in done.err, done.err
