"""Folders the tests read: the repository (the project most tests run against) and its parts.

One place, so a test names ``ROOT`` instead of counting ``parents[...]`` from its own file.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository: agents/, scenarios/, sop_library/, models.yaml, framework/."""
TESTS = ROOT / "tests"
FIXTURES = TESTS / "fixtures"
