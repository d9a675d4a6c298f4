"""What an employee learns about a person stays out of rooms with other people unless shared."""

from __future__ import annotations

from pathlib import Path

from cli_in_process import Cli, CliResult

from framework import Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec

SECRET = "alice-secret: 我的工资是 12345"


def recording() -> tuple[ScriptedChatModel, object]:
    model = ScriptedChatModel(replies=["好的。"] * 40)

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel:
        return model

    return model, factory


def prompts(model: ScriptedChatModel) -> str:
    return "\n".join(str(m.content) for call in model.calls for m in call)


async def test_a_dm_secret_never_reaches_a_room_with_someone_else(settings: Settings) -> None:
    model, factory = recording()
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:  # type: ignore[arg-type]
        staff.memory.memory("pm", "alice").add("facts", SECRET)  # learned in alice's DM
        staff.memory.memory("pm", "alice").add("preferences", "偏好语言: English")
        room = await staff.room("mixed-1", "tech-article")
        [e async for e in room.start()]
        [e async for e in room.post("我是 alice，方向可以。", author="alice")]
        [e async for e in room.post("我是 bob，补充一点。", author="bob")]
        assert model.calls and "12345" not in prompts(model)
        assert "偏好语言" not in prompts(model)

        # alice lets rooms see her preferences, and only those.
        staff.memory.share("pm", "alice", ["preferences"])
        model.calls.clear()
        [e async for e in room.post("@pm 继续", author="alice")]
        assert "偏好语言: English" in prompts(model) and "12345" not in prompts(model)


async def test_a_person_alone_in_a_room_is_remembered_whole(settings: Settings) -> None:
    model, factory = recording()
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:  # type: ignore[arg-type]
        staff.memory.memory("pm", "author").add("facts", "author-fact: 周五评审")
        room = await staff.room("solo-1", "tech-article")
        [e async for e in room.start()]
        [e async for e in room.post("继续", author="author")]
        assert "周五评审" in prompts(model)


def test_the_cli_sets_and_shows_what_rooms_may_see(cli: Cli, tmp_path: Path) -> None:
    def share(sections: str) -> CliResult:
        return cli("memory", "pm", "--user", "alice", "--share", sections, data=tmp_path)

    assert "rooms with other people now see preferences" in share("preferences").out
    bad = share("salary")
    assert bad.code == 2 and "unknown memory sections" in bad.err
    assert "now see nothing" in share("none").out


async def test_a_hand_edited_memory_over_its_cap_enters_the_prompt_cut(settings: Settings) -> None:
    model, factory = recording()
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:  # type: ignore[arg-type]
        path = staff.memory.memory_path("pm", "alice")
        path.parent.mkdir(parents=True)
        path.write_text("# 关键事实\n" + "很长的事实。" * 200_000 + "\n", encoding="utf-8")
        dm = await staff.dm("pm", "alice")
        [e async for e in dm.post("你好", author="alice")]
        sent = prompts(model)
        assert "characters over the 4000-character cap cut" in sent
        assert len(sent) < 20_000
