"""What a Staffroom gives its rooms beyond their scenarios: registered tools, hooks, blocks.

``Staffroom.extensions`` starts with the built-ins (``runtime/defaults.py`` calls each
feature's ``register``: the workspace tools, memory, SOPs, knowledge). An embedder adds its
own before opening rooms::

    staff.extensions.add_tool("search_kb", build_search_tool)
    staff.extensions.hooks.on_session_ended(write_journal)

Hooks apply at once to every room; a tool to the rooms built after it is added. The turn,
the prompt and the graph read them from the room, so adding one edits none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from framework.extensions.legacy import HooksWithShim
from framework.extensions.prompt_blocks import PromptBlocks
from framework.extensions.tools import RoomTools, ToolBuilder, ToolEntry, everyone
from framework.specs.employee import EmployeeCard


class Extensions:
    """Registered tools (by name), hooks (by point) and prompt blocks."""

    def __init__(self) -> None:
        self._tools: dict[str, ToolEntry] = {}
        self.hooks = HooksWithShim()
        """Hooks by point (``on_message_routed``, ``on_reply_logged``, ...)."""
        self.blocks = PromptBlocks()
        """Text blocks every turn's system prompt carries (see ``prompt_blocks.py``)."""

    def add_tool(
        self,
        name: str,
        build: ToolBuilder,
        *,
        given_to: Callable[[EmployeeCard], bool] = everyone,
    ) -> None:
        """Give rooms built from now on the tool ``name`` (``given_to``: which employees).

        ``build`` gets a :class:`~framework.extensions.tools.ToolScope` (session,
        employee, the person served, workspace, memory) and returns the Tool.
        """
        if name in self._tools:
            raise ValueError(f"a tool named {name!r} is already registered")
        self._tools[name] = ToolEntry(name, build, given_to)

    @property
    def tools(self) -> Mapping[str, ToolEntry]:
        """Registered tools by name, in registration order."""
        return dict(self._tools)

    def room_tools(self, employees: Mapping[str, EmployeeCard]) -> RoomTools:
        """Which tools each employee of one room holds."""
        return RoomTools.decide(self._tools, employees)
