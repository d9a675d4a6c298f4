"""SOP layer: versioned procedures, scoring, edits, revision and extraction (seed 000 §5)."""
