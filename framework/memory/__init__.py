"""Memory layers: MEMORY.md, HISTORY.md and consolidation."""
