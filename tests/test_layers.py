"""Layers import one way: no module imports from a layer above its own.

The order is written once, in the README's "Layers" list (between ``<!-- layers:start -->``
and ``<!-- layers:end -->``): ``N. **name**`` per layer, lowest first. A folder under
``framework/`` is its own layer; top-level modules belong to the layer whose line names them
in backticks (``errors.py``). Every import counts, including ``TYPE_CHECKING`` ones and those
inside functions: a cycle hidden in a function is still a cycle.

Within a layer too, no module imports one that imports it back, directly or round a loop
(same rule: deferred and ``TYPE_CHECKING`` imports count). What two modules both need goes
to a third that both import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "framework"


def readme_layers() -> tuple[list[str], dict[str, str]]:
    """The layers, lowest first, and which layer each top-level module belongs to.

    They are written once, on the docs' architecture page (``docs/architecture.md``).
    """
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
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


# Cycles other parts of issue 22 are removing (the hook seam's runtime loop; reflection moving
# into knowledge/): the merge of those parts empties this list. Any cycle not listed fails.
KNOWN_CYCLES: list[frozenset[str]] = []


def module_imports(path: Path, known: set[str]) -> dict[str, int]:
    """The framework modules ``path`` imports, each with the first line that imports it.

    ``from framework.sop import store`` names the module ``framework.sop.store``; a name that is
    not a module (a class, a function) names the package's ``__init__``.
    """
    found: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = imported_from(node, path)
            for alias in node.names:
                child = f"{target}.{alias.name}"
                found.setdefault(child if child in known else target, node.lineno)
    # ``import framework`` runs framework/__init__.py, which module_name calls framework.__init__.
    found = {("framework.__init__" if t == "framework" else t): n for t, n in found.items()}
    return {target: line for target, line in found.items() if target in known}


def imported_from(node: ast.ImportFrom, path: Path) -> str:
    """The absolute name of the module ``from X import ...`` reads, relative ones resolved."""
    if node.level == 0:
        return node.module or ""
    package = module_name(path).split(".")
    base = package[: len(package) - node.level + (path.name == "__init__.py")]
    return ".".join([*base, *filter(None, [node.module])])


def import_graph() -> tuple[dict[str, dict[str, int]], dict[str, Path]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(paths)
    return {name: module_imports(path, known) for name, path in paths.items()}, paths


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iterative: the groups of modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1 or node in graph[node]:
                    groups.append(frozenset(group))
    return groups


def test_no_module_imports_itself_back() -> None:
    graph, paths = import_graph()
    cycles = strongly_connected(graph)
    unknown = [group for group in cycles if group not in KNOWN_CYCLES]
    report = [
        "\n".join(
            f"  {paths[module].relative_to(ROOT)}:{graph[module][target]} imports {target}"
            for module in sorted(group)
            for target in sorted(graph[module])
            if target in group
        )
        for group in unknown
    ]
    assert report == [], "import cycles (move what both need to a module both import):\n" + (
        "\n\n".join(report)
    )
    stale = [sorted(group) for group in KNOWN_CYCLES if group not in cycles]
    assert stale == [], f"these cycles are gone: drop them from KNOWN_CYCLES: {stale}"


def test_a_loop_through_several_modules_is_one_cycle() -> None:
    graph = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e": 5}}
    assert sorted(map(sorted, strongly_connected(graph))) == [["a", "b", "c"], ["e"]]
