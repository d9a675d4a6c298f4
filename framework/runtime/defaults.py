"""The built-in tools and hooks every Staffroom starts with: each feature registers its own.

The workspace tools ``read_file``, ``write_file``, ``list_files`` (held by employees whose
card lists them) are registered here; memory (``memory/extension.py``), SOPs
(``sop/extension.py``) and knowledge (``knowledge/extension.py``) register theirs from
their own folders, capturing their stores. The order of registration is the order hooks run
at a point, and it matters: see the comments in the features' ``register``.
"""

from __future__ import annotations

from collections.abc import Callable

from framework.extensions.registry import Extensions
from framework.extensions.tools import ToolScope
from framework.knowledge import extension as knowledge_extension
from framework.knowledge.base import KnowledgeBase
from framework.memory import extension as memory_extension
from framework.memory.store import MemoryStore
from framework.settings import Settings
from framework.sop import extension as sop_extension
from framework.sop.service import SopService
from framework.specs.builtin_tools import BUILTIN_TOOLS
from framework.specs.employee import EmployeeCard
from framework.tools.base import Tool
from framework.tools.workspace import list_files_tool, read_file_tool, write_file_tool


def default_extensions(
    settings: Settings,
    memory_store: MemoryStore,
    sops: SopService,
    knowledge_base: KnowledgeBase | None = None,
) -> Extensions:
    """A fresh set of the built-in tools and hooks, bound to a Staffroom's stores.

    ``knowledge_base``: also the knowledge search tool, session-end extraction and prompt
    blocks (a Staffroom passes its own).
    """
    ext = Extensions()
    ext.add_tool("read_file", _read_file, given_to=_card_lists("read_file"))
    ext.add_tool("write_file", _write_file, given_to=_card_lists("write_file"))
    ext.add_tool("list_files", _list_files, given_to=_card_lists("list_files"))
    memory_extension.register(
        ext, memory_store, consolidate_in_background=settings.consolidate_in_background
    )
    # After the statement rule (its facts are in the log the SOP draft is read from).
    sop_extension.register(ext, sops, auto_extract=settings.sop_auto_extract)
    # After the SOP draft: it is distilled from the conversation alone.
    memory_extension.register_session_end(ext, memory_store)
    if knowledge_base is not None:
        knowledge_extension.register(ext, knowledge_base)
    return ext


def _card_lists(name: str) -> Callable[[EmployeeCard], bool]:
    """Held by employees whose card lists ``name`` (one of the cards' BUILTIN_TOOLS)."""
    assert name in BUILTIN_TOOLS, name

    def given_to(card: EmployeeCard) -> bool:
        return name in card.tools

    return given_to


def _read_file(scope: ToolScope) -> Tool:
    return read_file_tool(scope.workspace)


def _write_file(scope: ToolScope) -> Tool:
    return write_file_tool(scope.workspace, employee=scope.employee, claims=scope.claims)


def _list_files(scope: ToolScope) -> Tool:
    return list_files_tool(scope.workspace)
