"""A broken MEMORY.md (not UTF-8, a folder) is never rewritten and never stops a room.

Through the public API (Staffroom, Room.post, the offline models) and the CLI as a user runs it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cli_in_process import Cli
from stub_openai import StubOpenAI

from framework import Event, EventKind, Settings, Staffroom
from framework.errors import InputError
from framework.memory.memory_file import MemoryFile
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec

# Saved as GBK by an editor: 关键事实 / 喜欢简洁 are not UTF-8 bytes; the ASCII line is.
GBK = "# 关键事实\n- 喜欢简洁\n- deadline: 2027-01-15\n".encode("gbk")


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def memory_fallbacks(events: list[Event]) -> list[Event]:
    return [
        e
        for e in events
        if e.kind == EventKind.FALLBACK and isinstance(e.content, dict)
        if e.content.get("what") == "memory"
    ]


def replies(events: list[Event], employee: str = "pm") -> list[Event]:
    return [e for e in events if e.kind == EventKind.MESSAGE and e.author == employee]


def put(path: Path, raw: bytes | None) -> Path:
    """``raw`` as the file at ``path``; None makes it a folder instead."""
    if raw is None:
        path.mkdir(parents=True)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
    return path


def recording() -> tuple[ScriptedChatModel, object]:
    model = ScriptedChatModel(replies=["好的。"] * 40)

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel:
        return model

    return model, factory


def test_every_write_to_a_gbk_memory_is_refused_and_its_bytes_kept(tmp_path: Path) -> None:
    path = put(tmp_path / "MEMORY.md", GBK)
    memory = MemoryFile(path)
    for write in (
        lambda: memory.add("facts", "new fact"),
        lambda: memory.replace("facts", "deadline", "deadline: 2027-02-01"),
        lambda: memory.remove("facts", "deadline"),
    ):
        with pytest.raises(InputError) as refused:
            write()
        assert refused.value.file == str(path)
        assert "not UTF-8" in refused.value.message and "line 1" in refused.value.message
        assert "iconv -f GBK -t UTF-8" in (refused.value.fix or "")
        assert path.read_bytes() == GBK
    # Converted as the fix says, it takes writes again and nothing was lost.
    path.write_bytes(GBK.decode("gbk").encode("utf-8"))
    memory.add("facts", "new fact")
    assert memory.read().sections["facts"] == ["- 喜欢简洁", "- deadline: 2027-01-15", "new fact"]


def test_a_memory_folder_is_a_clear_input_error(tmp_path: Path) -> None:
    path = put(tmp_path / "MEMORY.md", None)
    with pytest.raises(InputError, match="is a folder, not a file") as refused:
        MemoryFile(path).read()
    assert refused.value.file == str(path) and "move it away" in (refused.value.fix or "")
    with pytest.raises(InputError, match="is a folder"):
        MemoryFile(path).add("facts", "x")
    assert path.is_dir() and not any(path.iterdir())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_in_place_of_memory_is_named_not_read(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    os.mkfifo(path)  # reading it would block until someone writes to it: a hung room
    with pytest.raises(InputError, match="is not a regular file"):
        MemoryFile(path).read()


async def test_a_dm_with_a_gbk_memory_answers_and_says_so(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        path = put(staff.memory.memory_path("pm", "alice"), GBK)
        dm = await staff.dm("pm", "alice")
        first = await drain(dm.post("我叫爱丽丝", author="alice"))  # the simulator saves it
        second = await drain(dm.post("还记得我吗", author="alice"))
    assert replies(first) and replies(second)
    refused = next(e for e in first if e.kind == EventKind.TOOL_RESULT)
    assert refused.content["ok"] is False and "not UTF-8" in refused.content["output"]
    assert path.read_bytes() == GBK
    # Said once per message the person posts, with the file and the fix, before the reply.
    for events in (first, second):
        [said] = memory_fallbacks(events)
        assert said.content["used"] == "read with U+FFFD for pm's prompt"
        assert str(path) in said.content["reason"] and "iconv" in said.content["reason"]
        assert events.index(said) < events.index(replies(events)[0])
    assert len(memory_fallbacks(dm.history())) == 2


async def test_a_gbk_memory_enters_the_prompt_decoded_with_replacement(
    settings: Settings,
) -> None:
    model, factory = recording()
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:  # type: ignore[arg-type]
        path = put(staff.memory.memory_path("pm", "alice"), GBK)
        dm = await staff.dm("pm", "alice")
        await drain(dm.post("你好", author="alice"))
    prompt = str(model.calls[0][0].content)
    assert "deadline: 2027-01-15" in prompt and "\ufffd" in prompt
    assert path.read_bytes() == GBK


async def test_a_memory_folder_leaves_memory_out_and_the_room_answers(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        path = put(staff.memory.memory_path("pm", "author"), None)
        room = await staff.room("broken-memory", "tech-article")
        await drain(room.start())
        events = await drain(room.post("方向可以，继续。", author="author"))
        dm = await staff.dm("pm", "author")
        in_dm = await drain(dm.post("我叫作者", author="author"))
    assert [e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human")]
    [said] = memory_fallbacks(events)  # once for the message, not once per turn
    assert said.content["used"].startswith("left out of") and str(path) in said.content["reason"]
    assert replies(in_dm) and memory_fallbacks(in_dm)
    assert path.is_dir() and not any(path.iterdir())


async def test_an_online_model_answers_past_a_gbk_memory(
    settings: Settings, stub_openai: StubOpenAI
) -> None:
    # With a real (non-offline) model the statement rule stores what a person says about
    # themselves; into a file that refuses writes it must not try, or the turn would fail.
    spec = ModelSpec.model_validate(f"openai:stub-model@{stub_openai.base_url}")
    online = settings.model_copy(update={"model_override": spec})
    async with await Staffroom.open(settings=online) as staff:
        path = put(staff.memory.memory_path("pm", "alice"), GBK)
        dm = await staff.dm("pm", "alice")
        events = await drain(dm.post("我叫爱丽丝", author="alice"))
    assert [e.text for e in replies(events)] == [stub_openai.default_text]
    assert memory_fallbacks(events) and path.read_bytes() == GBK


def test_staffroom_memory_on_a_folder_is_a_clear_error(cli: Cli, tmp_path: Path) -> None:
    put(tmp_path / "memory" / "pm" / "alice" / "MEMORY.md", None)
    shown = cli("memory", "pm", "--user", "alice", data=tmp_path)
    assert shown.code == 2
    assert "Traceback" not in shown.out + shown.err
    assert "MEMORY.md" in shown.err and "is a folder" in shown.err
    assert "fix: move it away" in shown.err


def test_staffroom_memory_on_gbk_shows_it_and_why_writes_are_refused(
    cli: Cli, tmp_path: Path
) -> None:
    path = put(tmp_path / "memory" / "pm" / "alice" / "MEMORY.md", GBK)
    shown = cli("memory", "pm", "--user", "alice", data=tmp_path)
    assert shown.code == 0, shown.err
    assert "deadline: 2027-01-15" in shown.out
    assert "writes refused" in shown.out and "iconv -f GBK -t UTF-8" in shown.out
    assert path.read_bytes() == GBK
