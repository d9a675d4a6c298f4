"""A project with a free-chat scenario for the gateway's tests: three employees, a policy per
test. The gateway opens rooms by scenario id only, so each scenario is written into the
project before ``Staffroom.open`` reads its catalog."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from backend import backend_database
from paths import ROOT

from framework import Settings

SCENARIO = """\
id: desk-{policy}
title: Help desk ({policy})
participants: [pm, engineer, designer]
humans: [alice, bob]
announcement:
  text: Free chat with three employees.
settings:
  double_texting: {policy}
  coalesce_window: {window}
  model: {{provider: simulated, options: {{delay: {delay}}}}}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The shipped employees and an empty scenarios/ folder."""
    root = tmp_path / "project"
    shutil.copytree(ROOT / "agents", root / "agents")
    (root / "scenarios").mkdir()
    return root


@pytest.fixture
def settings(tmp_path: Path, project: Path) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        project_dir=project,
        allow_network=False,
        model_backoff=0.01,
        database=backend_database(),
    )


@pytest.fixture
def desk(project: Path) -> Callable[..., str]:
    """Write a scenario with the given double-texting policy into the project; its id."""

    def write(
        policy: str = "enqueue", *, delay: float = 0.0, window: float = 0.3, extra: str = ""
    ) -> str:
        path = project / "scenarios" / f"desk_{policy}.yaml"
        text = SCENARIO.format(policy=policy, delay=delay, window=window) + extra
        path.write_text(text, "utf-8")
        return f"desk-{policy}"

    return write
