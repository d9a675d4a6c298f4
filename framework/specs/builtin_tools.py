"""Names of the tools every employee can be given; the runtime implements them."""

from __future__ import annotations

BUILTIN_TOOLS: tuple[str, ...] = ("read_file", "write_file", "list_files")
"""Tool names a card's ``tools`` and an SOP step's ``tools`` may use."""

__all__ = ["BUILTIN_TOOLS"]
