"""Fixture paths and helpers shared by the spec tests (a plain module: conftest names can
clash; the repository itself is tests/paths.py)."""

from __future__ import annotations

from pathlib import Path

from paths import FIXTURES

BAD = FIXTURES / "bad"


def line_containing(path: Path, needle: str) -> int:
    """1-based number of the first line of ``path`` that contains ``needle``."""
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in text:
            return number
    raise AssertionError(f"{needle!r} not in {path}")
