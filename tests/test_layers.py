"""Layers import one way: no module imports from a layer above its own.

The order is written once, in the README's "Layers" list (between ``<!-- layers:start -->``
and ``<!-- layers:end -->``): ``N. **name**`` per layer, lowest first. A folder under
``framework/`` is its own layer; top-level modules belong to the layer whose line names them
in backticks (``errors.py``). Every import counts, including ``TYPE_CHECKING`` ones and those
inside functions: a cycle hidden in a function is still a cycle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "framework"


def readme_layers() -> tuple[list[str], dict[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- layers:start -->")[1].split("<!-- layers:end -->")[0]
    order: list[str] = []
    members: dict[str, str] = {}
    for line in block.splitlines():
        match = re.match(r"^\d+\. \*\*([\w-]+)\*\*", line)
        if not match:
            continue
        order.append(match.group(1))
        for module in re.findall(r"`(\w+)\.py`", line):
            members[module] = match.group(1)
    return order, members


def layer_of(module: str, members: dict[str, str]) -> str:
    """``framework.sop.store`` -> ``sop``; ``framework.errors`` -> the layer naming it."""
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else "__init__"
    if (PACKAGE / head).is_dir():
        return head
    return members.get(head, f"<unlisted {head}.py>")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1] if len(parts) > 2 else [*parts[:-1], "__init__"]
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level:
            package = module_name(path).split(".")
            base = package[: len(package) - node.level + (path.name == "__init__.py")]
            found.append((node.lineno, ".".join([*base, *(node.module or "").split(".")])))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "framework"]


def test_every_framework_module_has_a_layer() -> None:
    order, members = readme_layers()
    assert order, "the README lists no layers"
    unlisted = {
        layer_of(module_name(p), members)
        for p in PACKAGE.rglob("*.py")
        if layer_of(module_name(p), members) not in order
    }
    assert unlisted == set(), "name these in the README's Layers list"


def test_no_layer_imports_one_above_it() -> None:
    order, members = readme_layers()
    rank = {name: i for i, name in enumerate(order)}
    upward: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = layer_of(module_name(path), members)
        for line, target in imports(path):
            theirs = layer_of(target, members)
            if rank.get(theirs, -1) > rank.get(own, len(order)):
                rel = path.relative_to(ROOT)
                upward.append(f"{rel}:{line} ({own}) imports {target} ({theirs})")
    assert upward == [], "\n".join(upward)
