"""A room's tools, decided once when the room is built: the turn calls them, the prompt lists them.

Tools are registered (:meth:`framework.extensions.registry.Extensions.add_tool`), never wired
into the turn: each entry says how to build the tool for one employee serving one person,
and which employees hold it. The built-in entries are the workspace tools (held by employees
whose card lists them) and the memory tool (held by everyone).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import SessionKey
from framework.sessions.workspace import Workspace
from framework.specs.employee import EmployeeCard
from framework.tools.base import Tool


class MemoryFiles(Protocol):
    """The memory store as a tool builder sees it (the store itself sits above this layer)."""

    def memory(self, employee: str, user: str) -> object:
        """The MEMORY.md of ``employee`` about ``user``."""
        ...


@dataclass(frozen=True, slots=True)
class ToolScope:
    """What a tool is built for: one employee serving one person in one session."""

    session: SessionKey
    employee: str
    user: str
    """The person this turn serves (the latest to speak; in a DM, the DM's user)."""
    workspace: Workspace
    memory: MemoryFiles
    """The memory store (a feature that needs the typed store captures it when it registers)."""
    claims: dict[str, str] | None = None
    """In a parallel step: workspace paths already written by a lane of this step, with the
    employee who wrote them (shared by the step's lanes; None outside parallel steps)."""
    log: JsonlLog | None = None
    """The session's log: what people said, which the memory tool judges entries against."""


ToolBuilder = Callable[[ToolScope], Tool]
"""Builds one tool for a scope (cheap: called for each turn of an employee holding it)."""


def everyone(_card: EmployeeCard) -> bool:
    """The default holder rule: every employee holds the tool."""
    return True


@dataclass(frozen=True, slots=True)
class ToolEntry:
    """A registered tool: its name, how to build it, and who holds it."""

    name: str
    build: ToolBuilder
    given_to: Callable[[EmployeeCard], bool] = everyone
    """Which employees hold it (by their card)."""


@dataclass(frozen=True, slots=True)
class RoomTools:
    """The tools each employee of one room holds, decided when the room is built."""

    entries: Mapping[str, ToolEntry]
    held: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Employee id -> the names of the tools it holds, in registration order."""
    _claims: dict[str, dict[str, str]] = field(default_factory=dict)

    def claims(self, parallel_step: str) -> dict[str, str]:
        """The workspace claims shared by the lanes of one parallel step (see ToolScope).

        Lanes run as tasks of one event loop and a claim is checked and taken with no await
        in between, so two lanes never both take one path. Only the latest step is kept.
        """
        if parallel_step not in self._claims:
            self._claims.clear()
            self._claims[parallel_step] = {}
        return self._claims[parallel_step]

    @classmethod
    def decide(
        cls, entries: Mapping[str, ToolEntry], employees: Mapping[str, EmployeeCard]
    ) -> RoomTools:
        """Which of ``entries`` each of ``employees`` holds."""
        held = {
            eid: tuple(name for name, entry in entries.items() if entry.given_to(card))
            for eid, card in employees.items()
        }
        return cls(dict(entries), held)

    def names(self, employee: str) -> list[str]:
        """The tools ``employee`` holds (what its prompt lists)."""
        return list(self.held.get(employee, ()))

    def build(self, scope: ToolScope) -> dict[str, Tool]:
        """The tools of one turn, by name (what the turn binds and calls)."""
        return {name: self.entries[name].build(scope) for name in self.names(scope.employee)}
