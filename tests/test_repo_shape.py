"""The README's tree matches framework/, and no module outgrows its budget."""

from __future__ import annotations

import re

from paths import ROOT

MAX_LINES = 400


def readme_tree() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("<!-- tree:start -->")[1].split("<!-- tree:end -->")[0]
    paths: set[str] = set()
    stack: list[str] = []
    for line in block.splitlines():
        match = re.match(r"^( *)([\w.]+/?)\s", line + " ")
        if not match or line.startswith("```"):
            continue
        depth = len(match.group(1)) // 2
        name = match.group(2)
        stack = stack[:depth]
        path = "/".join([*stack, name.rstrip("/")])
        paths.add(path)
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
    return paths


def actual_tree() -> set[str]:
    paths: set[str] = {"framework"}
    for path in (ROOT / "framework").rglob("*.py"):
        rel = path.relative_to(ROOT)
        if path.name not in ("__init__.py", "__main__.py"):
            paths.add(rel.as_posix())
        paths.update(p.as_posix() for p in rel.parents if p.as_posix() != ".")
    return paths


def test_readme_tree_matches_the_package() -> None:
    documented, actual = readme_tree(), actual_tree()
    assert actual - documented == set(), "add these to the README tree"
    assert documented - actual == set(), "remove these from the README tree"


def test_no_module_is_over_budget() -> None:
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "framework").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}
