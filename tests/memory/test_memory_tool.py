"""The ``memory`` tool: happy paths, and every failure comes back as ok=False with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.memory.memory_file import MemoryFile
from framework.memory.memory_tool import memory_tool
from framework.tools.base import Tool


@pytest.fixture
def memory(tmp_path: Path) -> MemoryFile:
    return MemoryFile(tmp_path / "memory" / "pm" / "alice" / "MEMORY.md", cap=400)


@pytest.fixture
def tool(memory: MemoryFile) -> Tool:
    return memory_tool(memory)


def test_schema_and_description(tool: Tool) -> None:
    schema = tool.schema()["function"]
    assert schema["name"] == "memory"
    params = schema["parameters"]["properties"]
    assert params["action"]["enum"] == ["add", "replace", "remove"]
    assert params["section"]["enum"] == ["identity", "project", "preferences", "facts"]
    assert "preferences" in tool.description and "replace" in tool.description
    assert "400 characters" in tool.description


async def test_add_replace_remove(tool: Tool, memory: MemoryFile) -> None:
    result = await tool.call(
        {"action": "add", "section": "preferences", "content": "偏好语言: 中文"}
    )
    assert result.ok and result.output == "added to preferences: 偏好语言: 中文"

    result = await tool.call(
        {"action": "add", "section": "preferences", "content": "偏好语言：English"}
    )
    assert result.ok
    assert result.output == "replaced in preferences: 偏好语言：English (was: 偏好语言: 中文)"

    result = await tool.call(
        {
            "action": "replace",
            "section": "preferences",
            "old": "偏好语言",
            "content": "偏好语言: English",
        }
    )
    assert result.ok
    assert result.output == "replaced in preferences: 偏好语言: English (was: 偏好语言：English)"

    result = await tool.call(
        {"action": "add", "section": "preferences", "content": "偏好语言: English"}
    )
    assert result.ok and result.output.startswith("unchanged")

    result = await tool.call({"action": "remove", "section": "preferences", "old": "English"})
    assert result.ok and result.output == "removed from preferences: 偏好语言: English"
    assert memory.read().sections["preferences"] == []


async def test_unknown_section(tool: Tool) -> None:
    result = await tool.call({"action": "add", "section": "hobbies", "content": "chess"})
    assert not result.ok
    assert "section" in result.output and "'preferences'" in result.output


@pytest.mark.parametrize(
    ("args", "needs"),
    [
        ({"action": "add", "section": "facts"}, "add needs `content`"),
        ({"action": "replace", "section": "facts", "old": "x"}, "replace needs `content`"),
        ({"action": "replace", "section": "facts", "content": "x"}, "replace needs `old`"),
        ({"action": "remove", "section": "facts", "content": "x"}, "remove needs `old`"),
        ({"action": "add", "section": "facts", "content": "  \n"}, "non-empty"),
    ],
)
async def test_missing_arguments(tool: Tool, args: dict[str, str], needs: str) -> None:
    result = await tool.call(args)
    assert not result.ok
    assert needs in result.output


async def test_old_not_found_lists_entries(tool: Tool, memory: MemoryFile) -> None:
    memory.add("identity", "姓名: alice")
    result = await tool.call({"action": "remove", "section": "identity", "old": "favourite colour"})
    assert not result.ok
    assert "no entry in identity matches 'favourite colour'" in result.output
    assert "- 姓名: alice" in result.output


async def test_over_cap_is_refused_with_advice(tool: Tool, memory: MemoryFile) -> None:
    memory.add("project", "项目背景: " + "很长的项目描述" * 20)
    before = memory.path.read_bytes()
    result = await tool.call({"action": "add", "section": "facts", "content": "新事实 " * 80})
    assert not result.ok
    assert "cap of 400" in result.output and "Largest section: project" in result.output
    assert "`replace`" in result.output and "`remove`" in result.output
    assert memory.path.read_bytes() == before
