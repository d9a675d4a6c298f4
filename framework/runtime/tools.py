"""Tools an employee may call: the protocol, the result type, and the built-in workspace tools.

Tool failures a model can fix (bad arguments, a path outside the workspace) come back as a
``ToolResult(ok=False)`` that is logged and shown to the model; they are never raised.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from framework.errors import StaffroomError
from framework.sessions.workspace import Workspace


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned: ``ok`` and the text shown to the model."""

    ok: bool
    output: str


@functools.cache
def _parameters(args_model: type[BaseModel]) -> dict[str, Any]:
    # Building a JSON Schema takes milliseconds and every turn binds its tools again; an
    # argument model never changes, so its schema is built once per process.
    return args_model.model_json_schema()


@dataclass(frozen=True, slots=True)
class Tool:
    """A callable tool with a pydantic argument model (its JSON Schema is sent to the model)."""

    name: str
    description: str
    args_model: type[BaseModel]
    run: Callable[[Any], Awaitable[ToolResult]]

    def schema(self) -> dict[str, Any]:
        """OpenAI-style function schema, accepted by every LangChain ``bind_tools``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _parameters(self.args_model),
            },
        }

    async def call(self, args: dict[str, Any]) -> ToolResult:
        """Validate ``args`` and run; argument and workspace errors become failed results."""
        try:
            parsed = self.args_model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            return ToolResult(False, f"Error: invalid arguments for {self.name}: {problems}")
        try:
            return await self.run(parsed)
        except StaffroomError as exc:
            return ToolResult(False, f"Error: {exc}")
        except OSError as exc:
            return ToolResult(False, f"Error: {self.name} failed: {exc.strerror or exc}")


class ReadFileArgs(BaseModel):
    path: str = Field(description="Path relative to the workspace root.")
    offset: int = Field(0, ge=0, description="First character to return.")
    limit: int = Field(4000, ge=1, le=20000, description="Characters to return.")


class WriteFileArgs(BaseModel):
    path: str = Field(description="Path relative to the workspace root.")
    content: str = Field(description="Full text of the file.")


class ListFilesArgs(BaseModel):
    pass


def workspace_tools(workspace: Workspace) -> dict[str, Tool]:
    """The built-in tools bound to one session workspace."""

    async def read_file(args: ReadFileArgs) -> ToolResult:
        text = workspace.read_text(args.path, offset=args.offset, limit=args.limit)
        return ToolResult(True, text)

    async def write_file(args: WriteFileArgs) -> ToolResult:
        workspace.write_text(args.path, args.content)
        return ToolResult(True, f"wrote {args.path} ({len(args.content)} characters)")

    async def list_files(args: ListFilesArgs) -> ToolResult:
        files = workspace.list_files()
        return ToolResult(True, "\n".join(files) if files else "(the workspace is empty)")

    tools = [
        Tool("read_file", "Read a workspace file, a page at a time.", ReadFileArgs, read_file),
        Tool("write_file", "Create or replace a workspace file.", WriteFileArgs, write_file),
        Tool("list_files", "List the files in the shared workspace.", ListFilesArgs, list_files),
    ]
    return {tool.name: tool for tool in tools}
