"""Memory through the public API: isolation, consolidation, caps, broken files."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

from langchain_core.messages import AIMessage

from framework import Event, EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.sessions.keys import SessionKey
from framework.specs.model_spec import ModelSpec
from framework.tools.workspace import read_file_tool


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def scripted_for(model: ScriptedChatModel, employee: str = "pm"):  # type: ignore[no-untyped-def]
    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == employee else None

    return factory


async def test_dm_memory_of_one_user_never_reaches_another(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["ok"] * 10)
    async with await Staffroom.open(settings=settings, model_factory=scripted_for(model)) as staff:
        staff.memory.memory("pm", "alice").add("identity", "姓名: Alice Wang")
        staff.memory.memory("pm", "alice").add("facts", "secret launch date: 2027-01-15")
        await drain((await staff.dm("pm", "alice")).post("hi", author="alice"))
        await drain((await staff.dm("pm", "bob")).post("hi", author="bob"))
        room = await staff.room("iso-1", "tech-article")
        await drain(room.post("大家好", author="bob"))
    alice_prompt, bob_prompt = str(model.calls[0][0].content), str(model.calls[1][0].content)
    assert "2027-01-15" in alice_prompt and "Alice Wang" in alice_prompt
    assert "2027-01-15" not in bob_prompt
    assert all("2027-01-15" not in str(m.content) for call in model.calls[1:] for m in call)


async def test_room_members_share_a_workspace_and_rooms_share_nothing(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        a = await staff.room("share-a", "tech-article")
        b = await staff.room("share-b", "tech-article")
        await drain(a.start())
        await drain(a.post("继续，房间 A 的秘密代号是 ZEBRA-7", author="author"))
        # pm, engineer and designer all wrote into room A's one workspace.
        files_a = a.workspace.list_files()
        assert {"outline.md", "draft.md", "figures.md"} <= set(files_a)
        await drain(b.start())
        assert "outline.md" in b.workspace.list_files()
        assert b.workspace.root != a.workspace.root
        assert all("ZEBRA-7" not in e.text for e in b.history())
        assert (
            await read_file_tool(b.workspace).call({"path": "../room:share-a/draft.md"})
        ).ok is False


async def test_consolidation_folds_old_turns_into_history_and_facts_into_memory(
    settings: Settings,
) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("engineer", "alice")
        await drain(dm.post("我叫爱丽丝，负责部署平台", author="alice"))
        for i in range(12):
            await drain(dm.post(f"问题 {i}：灰度怎么做？", author="alice"))
        await dm.drain()
        pointers = [e for e in dm.history() if e.kind == EventKind.CONSOLIDATION]
        assert pointers, "26 messages > memory_window 20 should have been consolidated"
        history = staff.memory.history(dm.key).lines()
        assert history[0].startswith(dm.history()[0].ts[:10])  # dated lines
        assert "alice：我叫爱丽丝" in history[0]
        memory = staff.memory.memory("engineer", "alice").read()
        assert "姓名: 爱丽丝" in memory.sections["identity"]
        # Running it again changes nothing: the pointer says what is done.
        before = staff.memory.history(dm.key).path.read_text(encoding="utf-8")
        report = await dm.consolidate()
        assert report.batches == 0
        assert staff.memory.history(dm.key).path.read_text(encoding="utf-8") == before


async def test_consolidation_with_a_model_uses_its_json_and_falls_back(settings: Settings) -> None:
    summary = json.dumps(
        {
            "history": ["alice 问了灰度方案"],
            "facts": [{"user": "alice", "section": "project", "entry": "项目: 部署平台"}],
        },
        ensure_ascii=False,
    )
    replies: list[object] = ["ok"] * 25 + [summary, "not json at all"]
    model = ScriptedChatModel(replies=replies)
    settings = settings.model_copy(update={"consolidate_in_background": False})
    async with await Staffroom.open(settings=settings, model_factory=scripted_for(model)) as staff:
        dm = await staff.dm("pm", "alice")
        await drain(dm.post("我们的项目是部署平台", author="alice"))  # the fact, said
        for i in range(1, 25):
            await drain(dm.post(f"消息 {i}", author="alice"))
        report = await dm.consolidate(force=True)
        assert report.batches == 4  # 50 messages, the newest 10 kept raw, 10 a batch
        lines = staff.memory.history(dm.key).lines()
        assert lines[0].endswith("alice 问了灰度方案")
        assert any("alice：消息" in line for line in lines[1:])  # the fallback batch
        assert "项目: 部署平台" in staff.memory.memory("pm", "alice").read().sections["project"]


async def test_memory_write_over_the_cap_is_refused_back_to_the_model(settings: Settings) -> None:
    long_entry = "很长的记忆" * 900
    call = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "memory",
                "args": {"action": "add", "section": "facts", "content": long_entry},
                "id": "m1",
                "type": "tool_call",
            }
        ],
    )
    model = ScriptedChatModel(replies=[call, "记不下，我先合并。"])
    async with await Staffroom.open(settings=settings, model_factory=scripted_for(model)) as staff:
        dm = await staff.dm("pm", "alice")
        # alice says it herself: the gate lets it through, the cap does not.
        events = await drain(dm.post(f"记住这个：{long_entry}", author="alice"))
    result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
    assert result.content["ok"] is False
    assert "4,000" in result.content["output"] and "one-line summary" in result.content["output"]
    assert not (settings.data_dir / "memory" / "pm" / "alice" / "MEMORY.md").exists()


async def test_a_corrupted_memory_file_never_breaks_a_turn(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        path = staff.memory.memory_path("pm", "alice")
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\xff\xfe garbage\n# weird title\nentry without section\n")
        dm = await staff.dm("pm", "alice")
        events = await drain(dm.post("你好", author="alice"))
    assert any(e.kind == EventKind.MESSAGE and e.author == "pm" for e in events)
    assert path.read_bytes().startswith(b"\xff\xfe garbage")  # read leniently, not rewritten


async def test_a_crash_between_history_and_pointer_does_not_double_summarise(
    settings: Settings,
) -> None:
    from framework.memory.consolidation import Consolidator, extractive_summariser

    settings = settings.model_copy(update={"consolidate_in_background": False})
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("pm", "alice")
        for i in range(15):
            await drain(dm.post(f"问题 {i}", author="alice"))

        class CrashOnPointer:
            """The real log, except the process 'dies' when the pointer is written."""

            def __init__(self, log: object) -> None:
                self._log = log

            def __getattr__(self, name: str) -> object:
                return getattr(self._log, name)

            def append(self, event: Event) -> bool:
                if event.kind == EventKind.CONSOLIDATION:
                    raise KeyboardInterrupt("killed before the pointer was written")
                return bool(self._log.append(event))  # type: ignore[attr-defined]

        def consolidator(log: object) -> Consolidator:
            return Consolidator(
                log=log,  # type: ignore[arg-type]
                history=staff.memory.history(dm.key),
                memory_for=staff.memory.memory,
                employees=["pm"],
                window=20,
                summarise=extractive_summariser({"alice"}),
            )

        with contextlib.suppress(KeyboardInterrupt):
            await consolidator(CrashOnPointer(staff.sessions.log(SessionKey.parse(dm.key)))).run(
                force=True
            )
        first = staff.memory.history(dm.key).lines()
        report = await consolidator(staff.sessions.log(SessionKey.parse(dm.key))).run(force=True)
        lines = staff.memory.history(dm.key).lines()
        assert report.batches == 2  # 30 messages, newest 10 kept: two batches of 10
        assert lines[: len(first)] == first and len(lines) == len(set(lines))
