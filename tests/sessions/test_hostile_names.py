"""Every name that becomes a path is checked at the edge: no input leaves the data folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_in_process import Cli

from framework import InputError, Settings, Staffroom
from framework.specs.scenario import load_scenario

HOSTILE = [
    "../../../../tmp/staffroom-escape",
    "a/b",
    "..",
    ".",
    ".hidden",
    "nul\x00byte",
    "back\\slash",
    "",
    "x" * 200,
    "with space",
    "colon:name",
    "esc\x1b[31m",
]


def no_escape(tmp_path: Path) -> None:
    outside = [p for p in tmp_path.parent.glob("staffroom-escape*")]
    assert not outside and not Path("/tmp/staffroom-escape").exists()


@pytest.mark.parametrize("name", HOSTILE)
async def test_hostile_authors_users_and_memory_names_are_refused(
    settings: Settings, tmp_path: Path, name: str
) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("names-1", "tech-article")
        with pytest.raises(InputError, match="invalid name"):
            [e async for e in room.post("你好", author=name)]
        with pytest.raises(InputError):
            await staff.dm("pm", name)
        with pytest.raises(InputError, match="invalid name"):
            staff.memory.memory("pm", name)
        with pytest.raises(InputError):
            await staff.room(name, "tech-article")
        # The room still answers a well-named person afterwards.
        events = [e async for e in room.post("继续", author="author")]
        assert any(e.author == "author" for e in events)
    no_escape(tmp_path)


@pytest.mark.parametrize("name", ["../../../../tmp/x", "a\x00b", "a/b", ".."])
def test_a_scenario_with_a_hostile_human_is_a_file_line_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / "s.yaml"
    text = (
        "id: s\ntitle: t\nparticipants: [pm]\n"
        f'humans: ["author", "{name.encode("unicode_escape").decode()}"]\n'
        "announcement: hi\n"
    )
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert caught.value.line == 4 and caught.value.field == "humans[1]"
    assert "invalid name" in caught.value.message


def test_the_cli_refuses_hostile_users(cli: Cli, tmp_path: Path) -> None:
    for args in (["memory", "pm", "--user", "../../sessions"], ["dm", "pm", "--user", "../x"]):
        done = cli(*args, data=tmp_path)
        assert done.code == 2 and "invalid name" in done.err
        assert "Traceback" not in done.err
