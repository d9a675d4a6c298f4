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


def read_file_tool(workspace: Workspace) -> Tool:
    """``read_file``: a page of a workspace file."""

    async def read_file(args: ReadFileArgs) -> ToolResult:
        text = workspace.read_text(args.path, offset=args.offset, limit=args.limit)
        return ToolResult(True, text)

    return Tool("read_file", "Read a workspace file, a page at a time.", ReadFileArgs, read_file)


def write_file_tool(
    workspace: Workspace, *, employee: str = "", claims: dict[str, str] | None = None
) -> Tool:
    """``write_file``: create or replace a workspace file.

    ``claims`` is shared by the lanes of one parallel step: a file one lane wrote is refused
    to the others (with the fix), instead of the last writer silently replacing the text.
    """

    async def write_file(args: WriteFileArgs) -> ToolResult:
        if claims is not None:
            where = workspace.resolve(args.path).relative_to(workspace.root.resolve()).as_posix()
            owner = claims.setdefault(where, employee)
            if owner != employee:
                stem, dot, ext = where.rpartition(".")
                mine = f"{stem}-{employee}.{ext}" if dot else f"{where}-{employee}"
                return ToolResult(
                    False,
                    f"Error: {owner} already wrote {where} in this parallel step; writing it "
                    f"too would replace their text. Write your part to another file, e.g. "
                    f"{mine}.",
                )
        workspace.write_text(args.path, args.content)
        return ToolResult(True, f"wrote {args.path} ({len(args.content)} characters)")

    return Tool("write_file", "Create or replace a workspace file.", WriteFileArgs, write_file)


def list_files_tool(workspace: Workspace) -> Tool:
    """``list_files``: every file in the workspace."""

    async def list_files(args: ListFilesArgs) -> ToolResult:
        files = workspace.list_files()
        return ToolResult(True, "\n".join(files) if files else "(the workspace is empty)")

    return Tool("list_files", "List the files in the shared workspace.", ListFilesArgs, list_files)


def workspace_tools(workspace: Workspace) -> dict[str, Tool]:
    """The built-in tools bound to one session workspace."""
    tools = [read_file_tool(workspace), write_file_tool(workspace), list_files_tool(workspace)]
    return {tool.name: tool for tool in tools}
