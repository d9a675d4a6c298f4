"""Every notebook runs top to bottom (code cells executed in order, in one namespace)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(notebook.parent)
    monkeypatch.setenv("STAFFROOM_HOME", str(tmp_path))
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    namespace: dict[str, object] = {"__name__": "__notebook__"}
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        exec(compile(source, f"{notebook.name}[cell {index}]", "exec"), namespace)
    assert os.listdir(tmp_path), "the notebook should leave its data in STAFFROOM_HOME"


def test_there_is_a_notebook() -> None:
    assert NOTEBOOKS
