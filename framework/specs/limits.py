"""Size and range limits of what spec files may say, in one place (listed in the docs' errors page).

Each limit is far above what a demanding team writes and far below what hurts:

- An **id** (scenario, employee, SOP) becomes part of paths and session keys
  (``memory/<employee>/``, ``room:<scenario>-<time>``, ``sop_library/<id>/``), so it is short:
  :data:`MAX_ID_CHARS`, well inside :mod:`framework.names`' 128-character rule.
- A **label** (title, display name, role, stop word, speaker, scope) is one line a person reads:
  :data:`MAX_LABEL_CHARS`.
- A **text** (announcement, its ``sop`` template and what that renders to, persona, SOP goal and
  steps) goes into *every* prompt of every turn: :data:`MAX_TEXT_CHARS` is about ten printed
  pages, or a sixth of a 128k-token window in Chinese (one token per character) sent again on
  each turn. Longer material belongs in the workspace, where employees read it with
  ``read_file`` when they need it.
- Numbers (turns, windows, budgets, versions) each have a range in their field; the error names
  the field and the range.
"""

from __future__ import annotations

MAX_ID_CHARS = 64
"""Characters of an id (scenario, employee, SOP)."""
MAX_LABEL_CHARS = 200
"""Characters of a one-line label: a title, display name, role, stop word, speaker, path."""
MAX_TEXT_CHARS = 20_000
"""Characters of a text sent in prompts: announcement (and its rendered sop slot), persona,
SOP goal, step, fallback."""
MAX_VERSION = 1_000_000
"""Highest SOP version number (the store keeps versions as SQLite integers)."""

__all__ = ["MAX_ID_CHARS", "MAX_LABEL_CHARS", "MAX_TEXT_CHARS", "MAX_VERSION"]
