"""The built-in workspace tools: read, write and list files of the room's shared folder."""

from __future__ import annotations

from pydantic import BaseModel, Field

from framework.sessions.workspace import Workspace
from framework.tools.base import Tool, ToolResult


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
