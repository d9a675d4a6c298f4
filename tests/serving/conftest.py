"""A free-chat scenario for the gateway's tests: three employees, a policy per test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

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
def desk(tmp_path: Path) -> Callable[..., Path]:
    """Write a scenario file with the given double-texting policy; return its path."""

    def write(
        policy: str = "enqueue", *, delay: float = 0.0, window: float = 0.3, extra: str = ""
    ) -> Path:
        path = tmp_path / "scenarios" / f"desk_{policy}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = SCENARIO.format(policy=policy, delay=delay, window=window) + extra
        path.write_text(text, "utf-8")
        return path

    return write
