"""Every notebook runs top to bottom, as a Jupyter kernel would run it, with no kernel.

Code cells run in order in one namespace with ``STAFFROOM_HOME`` set to a temporary folder.
A cell may ``await`` at top level (IPython allows it): the cells share one event loop, kept
for the whole notebook as a kernel keeps its own, so a Staffroom opened in one cell is used in
the next. Whatever a notebook leaves open when a cell fails (a Staffroom, a server process) is
closed here, so a failing notebook never leaves a server running.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import linecache
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from paths import ROOT

from framework import Staffroom

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def run_cell(
    source: str, name: str, namespace: dict[str, Any], loop: asyncio.AbstractEventLoop
) -> None:
    # Registered so a failing cell's traceback shows its lines, not "???".
    linecache.cache[name] = (len(source), None, source.splitlines(keepends=True), name)
    code = compile(source, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if code.co_flags & inspect.CO_COROUTINE:
        # A cell with top-level await compiles to a coroutine; the kernel's loop runs it.
        loop.run_until_complete(eval(code, namespace))
    else:
        exec(code, namespace)


def clean_up(namespace: dict[str, Any], loop: asyncio.AbstractEventLoop) -> list[str]:
    """Stop what the notebook left running; say what was found (empty after a clean run)."""
    left: list[str] = []
    for name, value in list(namespace.items()):
        if isinstance(value, subprocess.Popen) and value.poll() is None:
            left.append(f"process {name} (pid {value.pid})")
            value.terminate()
            try:
                value.wait(timeout=10)
            except subprocess.TimeoutExpired:
                value.kill()
                value.wait(timeout=10)
        elif isinstance(value, Staffroom):
            # close() is idempotent enough to call again; errors here must not hide the cell's.
            try:
                loop.run_until_complete(value.close())
            except Exception as exc:
                left.append(f"Staffroom {name} (close failed: {exc})")
    return left


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(notebook: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(notebook.parent)
    monkeypatch.setenv("STAFFROOM_HOME", str(tmp_path))
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    namespace: dict[str, Any] = {"__name__": "__notebook__"}
    loop = asyncio.new_event_loop()
    try:
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                run_cell("".join(cell["source"]), f"{notebook.name}[cell {index}]", namespace, loop)
    finally:
        left = clean_up(namespace, loop)
        loop.close()
    assert not any(p.startswith("process") for p in left), f"left running: {left}"
    assert os.listdir(tmp_path), "the notebook should leave its data in STAFFROOM_HOME"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_stored_clean(notebook: Path) -> None:
    """Valid nbformat 4, with no outputs: what is committed is the source, not a past run."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    assert data["nbformat"] == 4 and data["nbformat_minor"] >= 5
    assert data["metadata"]["kernelspec"]["name"] == "python3"
    ids = [cell["id"] for cell in data["cells"]]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    for cell in data["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert isinstance(cell["source"], list) and cell["metadata"] == {}
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None, cell["id"]
        else:
            assert "outputs" not in cell


def test_there_is_a_notebook() -> None:
    assert len(NOTEBOOKS) >= 5
