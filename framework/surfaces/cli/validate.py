"""``staffroom validate`` and ``staffroom schema``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from framework.specs.catalog import Catalog
from framework.specs.json_schema import schemas


def validate(paths: list[Path], project: Path, console: Console) -> int:
    """Check files and folders; print every problem found; 0 when all are valid."""
    catalog = Catalog.load(project / "agents", project / "scenarios", project / "sop_library")
    errors = catalog.validate_paths(paths)
    for error in errors:
        console.print(f"[red]✗[/] {escape(error.render())}", highlight=False)
    if errors:
        console.print(f"[red]{len(errors)} problem(s)[/]")
        return 1
    console.print(f"[green]✓[/] {', '.join(str(p) for p in paths)}: valid")
    return 0


def print_schema(kind: str | None, console: Console) -> int:
    """Print JSON Schema for editors (all kinds, or one)."""
    all_schemas = schemas()
    if kind is not None and kind not in all_schemas:
        console.print(f"[red]unknown kind '{kind}'[/]; choose one of {', '.join(all_schemas)}")
        return 2
    out = all_schemas[kind] if kind else all_schemas
    # Plain stdout: rich would wrap long lines and break the JSON.
    sys.stdout.write(json.dumps(out, ensure_ascii=False, indent=2) + "\n")
    return 0
