"""Tools employees call: the Tool type, the built-in workspace tools, the output budget."""

from framework.tools.base import Tool, ToolResult
from framework.tools.output import GovernedOutput, govern, model_view
from framework.tools.workspace import workspace_tools

__all__ = ["GovernedOutput", "Tool", "ToolResult", "govern", "model_view", "workspace_tools"]
