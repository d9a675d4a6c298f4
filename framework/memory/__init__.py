"""Memory layers: MEMORY.md, HISTORY.md, consolidation and tool-output governance."""
