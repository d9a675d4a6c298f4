"""Tools and hooks are registered, not wired: a new one reaches the turn, the prompt and the
run without editing the runtime. Sessions end (close, or idle) and say so in the log."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from backend import backend_database
from langchain_core.messages import AIMessage
from paths import ROOT
from pydantic import BaseModel

from framework import (
    EventKind,
    HookCall,
    HookContext,
    HookPoint,
    MessageRouted,
    ReplyLogged,
    RunEnded,
    SessionEnded,
    Settings,
    Staffroom,
)
from framework.errors import StorageError
from framework.extensions.prompt_blocks import PromptScope
from framework.extensions.tools import ToolScope
from framework.models import ScriptedChatModel
from framework.sessions.events import Event
from framework.specs.model_spec import ModelSpec
from framework.tools.base import Tool, ToolResult


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


class NoArgs(BaseModel):
    pass


def clock_tool(scope: ToolScope) -> Tool:
    async def run(_args: NoArgs) -> ToolResult:
        return ToolResult(True, f"12:00 for {scope.employee} serving {scope.user}")

    return Tool("clock", "Tell the time.", NoArgs, run)


async def test_a_registered_tool_reaches_the_prompt_and_the_turn(settings: Settings) -> None:
    call = {"name": "clock", "args": {}, "id": "c1", "type": "tool_call"}
    model = ScriptedChatModel(replies=[AIMessage(content="", tool_calls=[call]), "正午。"])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        staff.extensions.add_tool("clock", clock_tool, given_to=lambda card: card.id == "pm")
        dm = await staff.dm("pm", "alice")
        other = await staff.dm("engineer", "alice")
        events = await drain(dm.post("几点了？", author="alice"))
    assert "clock" in dm.tools("pm") and "memory" in dm.tools("pm")
    assert "clock" not in other.tools("engineer"), "given_to decides who holds it"
    result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
    assert result.content["ok"] and result.content["output"] == "12:00 for pm serving alice"
    assert "clock" in str(model.calls[0][0].content), "the prompt lists the tool"
    assert events[-1].kind == EventKind.MESSAGE and events[-1].text == "正午。"


async def test_hooks_run_at_their_points(tmp_path: Path, settings: Settings) -> None:
    seen: list[tuple[str, str]] = []

    async def on_reply(reply: ReplyLogged, ctx: HookContext) -> None:
        seen.append(("reply", reply.employee))

    async def on_run_end(ended: RunEnded, ctx: HookContext) -> None:
        seen.append(("run_end", ended.reason))
        ctx.events.emit(EventKind.PLAN, "system", {"note": "journal"}, id=f"{ended.id}-journal")

    async def on_session_end(ended: SessionEnded, ctx: HookContext) -> None:
        seen.append(("session_end", ended.reason))

    async with await Staffroom.open(settings=settings) as staff:
        staff.extensions.hooks.on_reply_logged(on_reply)
        staff.extensions.hooks.on_run_ended(on_run_end)
        staff.extensions.hooks.on_session_ended(on_session_end)
        room = await staff.room("hooks-1", "tech-article")
        await drain(room.start())
        events = await drain(room.post("方向没问题，继续", author="author"))
        # The hook's event comes before the outcome that closes the run, streamed live.
        kinds = [e.kind for e in events]
        assert kinds.index(EventKind.PLAN) < kinds.index(EventKind.OUTCOME)
        ended = await room.close()
        again = await room.close()
    replies = [who for point, who in seen if point == "reply"]
    spoken = [e for e in room.history() if e.kind == EventKind.MESSAGE and not e.meta.get("human")]
    assert replies == [e.author for e in spoken], "once per employee reply"
    assert ("run_end", "sop_complete") in seen
    assert seen.count(("session_end", "closed")) == 1, "a closed session ends once"
    assert ended[-1].kind == EventKind.SESSION_END and ended[-1].content["reason"] == "closed"
    assert ended[-1].content["first"] == room.history()[0].id
    assert again == [], "nothing said since: nothing to end"


async def test_a_failing_hook_is_recorded_and_the_room_answers(settings: Settings) -> None:
    async def broken(routed: MessageRouted, ctx: HookContext) -> None:
        raise StorageError("the journal disk is full")

    async with await Staffroom.open(settings=settings) as staff:
        staff.extensions.hooks.on_message_routed(broken, name="journal")
        dm = await staff.dm("pm", "alice")
        events = await drain(dm.post("你好", author="alice"))
    failed = next(e for e in events if e.kind == EventKind.ERROR)
    assert failed.content["error"] == "hook_failed" and failed.content["hook"] == "journal"
    assert "the journal disk is full" in failed.content["detail"]
    # Ids and wording as before the typed events: old logs read the same.
    routed = next(e for e in events if e.kind == EventKind.MESSAGE and e.meta.get("human"))
    assert failed.id == f"{routed.id}-journal-failed" and failed.meta["point"] == "message"
    assert failed.content["detail"].startswith("journal (message) failed: StorageError: ")
    assert events[-1].kind == EventKind.MESSAGE and events[-1].author == "pm"


async def test_a_hook_sees_the_scenario_settings_and_the_roster(settings: Settings) -> None:
    seen: list[object] = []

    async def look(routed: MessageRouted, ctx: HookContext) -> None:
        seen.extend([routed.author, routed.content, str(ctx.key), ctx.scenario.id])
        seen.extend([sorted(ctx.employees), ctx.participants, ctx.humans, ctx.language])
        seen.append(ctx.scenario_settings is ctx.scenario.settings)
        seen.append(ctx.model("pm").profile.label)

    async with await Staffroom.open(settings=settings) as staff:
        staff.extensions.hooks.on_message_routed(look)
        dm = await staff.dm("pm", "alice")
        await drain(dm.post("你好", author="alice"))
    assert seen == [
        "alice",
        "你好",
        str(dm.key),
        "dm-pm",
        ["pm"],
        ["pm"],
        ["alice"],
        "zh",
        True,
        "simulated",
    ]


async def test_an_old_style_hook_still_runs_and_warns(settings: Settings) -> None:
    seen: list[tuple[str, object]] = []

    async def journal(call: HookCall) -> None:
        assert call.session is not None
        seen.append((call.session.reason, call.room.settings))
        call.events.emit(EventKind.PLAN, "system", {"note": "journal"}, id=f"{call.id}-journal")

    async def heard(call: HookCall) -> None:
        assert call.message is not None
        seen.append(("message", call.message["content"]))

    async def replied(call: HookCall) -> None:
        assert call.reply is not None
        seen.append(("reply", call.reply.employee))

    async with await Staffroom.open(settings=settings) as staff:
        with pytest.warns(DeprecationWarning, match="on_session_ended"):
            staff.extensions.hooks.on(HookPoint.SESSION_END, journal)
        with pytest.warns(DeprecationWarning, match="on_message_routed"):
            staff.extensions.hooks.on(HookPoint.MESSAGE, heard)
        with pytest.warns(DeprecationWarning, match="on_reply_logged"):
            staff.extensions.hooks.on(HookPoint.REPLY, replied)
        dm = await staff.dm("pm", "alice")
        await drain(dm.post("你好", author="alice"))
        with pytest.warns(DeprecationWarning, match="HookCall.room is deprecated"):
            ended = await dm.close()
    assert seen[:2] == [("message", "你好"), ("reply", "pm")]
    assert seen[2:] == [("closed", staff.settings)], "call.room.settings: the runtime Settings"
    ids = [e.id for e in ended]
    assert f"{ended[-1].id}-journal" in ids[:-1], "its event, before the session's end"


async def test_an_idle_dm_ends_its_session_before_the_next_message(settings: Settings) -> None:
    settings = settings.model_copy(update={"session_idle": 0.2})
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("pm", "alice")
        await drain(dm.post("我叫 Alice，负责发布", author="alice"))
        await asyncio.sleep(0.3)
        assert dm.idle and list(await staff.close_idle()) == [dm.key]
        await drain(dm.post("还在吗", author="alice"))
        await asyncio.sleep(0.3)
        events = await drain(dm.post("再问一个", author="alice"))
        history_lines = staff.memory.history(dm.key).lines()
    kinds = [e.kind for e in events]
    end = kinds.index(EventKind.SESSION_END)
    assert events[end].content["reason"] == "idle"
    # The session-end work (the knowledge layers) first, then the end, then the message.
    assert EventKind.KNOWLEDGE in kinds[:end]
    assert events[end + 1].kind == EventKind.MESSAGE and events[end + 1].text == "再问一个"
    ends = [e for e in dm.history() if e.kind == EventKind.SESSION_END]
    assert [e.content["reason"] for e in ends] == ["idle", "idle"]
    assert history_lines, "the ended session was folded into HISTORY.md"


async def test_parallel_lanes_never_silently_overwrite_one_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "agents", project / "agents")
    shutil.copytree(ROOT / "scenarios", project / "scenarios")
    card = project / "sop_library" / "tech_article" / "v1.md"
    card.parent.mkdir(parents=True)
    card.write_text(
        "---\nid: tech-article\nversion: 1\nscope: scenario:tech-article\ngoal: 事故通报\n"
        "steps:\n  - {speaker: [engineer, designer], do: 各自更新状态, parallel: true,"
        " produces: [status.md]}\n  - {speaker: pm, do: 汇总}\n"
        "change_log:\n  - {version: 1, why: test, by: admin}\n---\n",
        encoding="utf-8",
    )
    settings = Settings(
        data_dir=tmp_path / "d",
        project_dir=project,
        allow_network=False,
        database=backend_database(),
    )
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("par-2", "tech-article")
        events = await drain(room.start())
        text = room.workspace.read_text("status.md")
    results = [e for e in events if e.kind == EventKind.TOOL_RESULT]
    assert sorted(r.content["ok"] for r in results) == [False, True]
    kept = next(r for r in results if r.content["ok"])
    refused = next(r for r in results if not r.content["ok"])
    assert (
        f"{kept.author} already wrote status.md in this parallel step"
        in (refused.content["output"])
    )
    assert f"status-{refused.author}.md" in refused.content["output"], "the fix is named"
    assert f"author: {kept.author}" in text, "the file holds the first writer's text"


async def test_a_registered_prompt_block_reaches_the_prompt(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["好的。", "好的。"])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    def open_tasks(scope: PromptScope) -> str:
        return f"- 给 {scope.user} 回复发布时间 ({scope.employee}, {scope.scenario})"

    def broken(scope: PromptScope) -> str:
        raise StorageError("trackers/pm/tasks.json is unreadable")

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        staff.extensions.blocks.add("tasks", "未完成的任务 / Open tasks", open_tasks)
        staff.extensions.blocks.add("broken", "Broken", broken)
        dm = await staff.dm("pm", "alice")
        events = await drain(dm.post("在吗", author="alice"))
    prompt = str(model.calls[0][0].content)
    assert "## 未完成的任务 / Open tasks\n- 给 alice 回复发布时间 (pm, dm-pm)" in prompt
    assert "## Broken" not in prompt
    said = next(e for e in events if e.kind == EventKind.FALLBACK)
    assert said.content["what"] == "prompt" and "the broken block" in said.content["used"]
    assert "unreadable" in said.content["reason"]
    assert events[-1].kind == EventKind.MESSAGE and events[-1].text == "好的。"
