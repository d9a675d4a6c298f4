"""Public names a package re-exports, imported on first use.

``staffroom --help`` imports ``framework`` and ``framework.specs`` (everything under them
does); importing every public name up front made each command pay for langgraph, langchain
and all the spec models before it printed a line. A package lists its names' home modules
once and gets the module ``__getattr__`` / ``__dir__`` (PEP 562) that load them; its
``TYPE_CHECKING`` imports keep them typed for mypy.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def exports(
    package: str, homes: dict[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``homes`` maps a public name to the
    module that defines it (absolute, e.g. ``framework.staffroom``)."""

    def getattr_(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value: object = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def dir_() -> list[str]:
        return sorted({*vars(sys.modules[package]), *homes})

    return getattr_, dir_
