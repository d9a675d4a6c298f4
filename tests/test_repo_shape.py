"""The architecture page's folder list matches framework/; every module says what it does in its
docstring and stays within its budget."""

from __future__ import annotations

import ast
import re

from paths import ROOT

MAX_LINES = 400
PAGE = ROOT / "docs" / "architecture.md"


def documented_folders() -> dict[str, str]:
    """Each folder the page lists (``framework/sop``) -> the line saying what it owns."""
    text = PAGE.read_text(encoding="utf-8")
    block = text.split("<!-- folders:start -->")[1].split("<!-- folders:end -->")[0]
    folders: dict[str, str] = {}
    stack: list[str] = []
    for line in block.splitlines():
        match = re.match(r"^( *)([\w.-]+)/(.*)$", line)
        if not match:
            continue
        depth = len(match.group(1)) // 2
        stack = [*stack[:depth], match.group(2)]
        folders["/".join(stack)] = match.group(3).strip()
    return folders


def actual_folders() -> set[str]:
    return {"framework"} | {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "framework").rglob("*")
        if p.is_dir() and p.name != "__pycache__"
    }


def test_every_folder_is_on_the_architecture_page() -> None:
    documented, actual = documented_folders(), actual_folders()
    assert actual - documented.keys() == set(), "add these to docs/architecture.md's folders"
    assert documented.keys() - actual == set(), "remove these from docs/architecture.md"


def test_every_listed_folder_says_what_it_owns() -> None:
    assert {name for name, owns in documented_folders().items() if not owns} == set()


def test_every_module_says_what_it_does() -> None:
    # The docs list folders, not files: a module's docstring is where a reader learns its job.
    silent = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "framework").rglob("*.py")
        if p.name != "__init__.py" and ast.get_docstring(ast.parse(p.read_bytes())) is None
    ]
    assert silent == []


def test_no_module_is_over_budget() -> None:
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "framework").rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}
