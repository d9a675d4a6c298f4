"""Projects the tests write: the shipped employees and a scenario file of the test's own."""

from __future__ import annotations

import shutil
from pathlib import Path

from paths import ROOT


def project_with(folder: Path, scenarios: dict[str, str]) -> Path:
    """``folder`` made a project: agents/ copied from the repository and each
    ``scenarios/<name>.yaml`` written from ``scenarios``; returns ``folder``."""
    shutil.copytree(ROOT / "agents", folder / "agents")
    (folder / "scenarios").mkdir()
    for name, text in scenarios.items():
        (folder / "scenarios" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder
