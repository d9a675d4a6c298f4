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


_COUNTS = {2: "two", 3: "three"}


def desk(
    delay: float, *, employees: tuple[str, ...] = ("pm", "engineer"), settings: str = ""
) -> str:
    """A free-chat help desk (scenario id ``desk``) of ``employees`` with alice and bob, on
    the offline simulator (a test double sleeping ``delay`` s per call); ``settings``: more
    lines of its ``settings:`` block, one setting a line."""
    indented = "".join(f"  {line}\n" for line in settings.splitlines())
    return (
        "id: desk\n"
        "title: Help desk\n"
        f"participants: [{', '.join(employees)}]\n"
        "humans: [alice, bob]\n"
        "announcement:\n"
        f"  text: Free chat with {_COUNTS.get(len(employees), len(employees))} employees.\n"
        "settings:\n"
        f"{indented}"
        f"  model: {{provider: simulated, options: {{delay: {delay}}}}}\n"
    )
