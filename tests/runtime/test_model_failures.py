"""Model errors, malformed tool calls and unknown tools are recorded, never crash a room."""

from __future__ import annotations

from collections.abc import AsyncIterator

from langchain_core.messages import AIMessage

from framework import Event, EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec


async def collect(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def open_with(settings: Settings, employee: str, model: ScriptedChatModel) -> Staffroom:
    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == employee else None

    return await Staffroom.open(settings=settings, model_factory=factory)


async def test_model_error_is_shown_and_the_dm_keeps_working(settings: Settings) -> None:
    model = ScriptedChatModel(replies=[RuntimeError("upstream 503"), "好的，已恢复。"])
    async with await open_with(settings, "pm", model) as staff:
        dm = await staff.dm("pm", "alice")
        failed = await collect(dm.post("你好", author="alice"))
        errors = [e for e in failed if e.kind == EventKind.ERROR]
        assert errors and errors[0].content["error"] == "model_error"
        assert "upstream 503" in errors[0].content["detail"]
        ok = await collect(dm.post("在吗？", author="alice"))
        assert [e.text for e in ok if e.kind == EventKind.MESSAGE and e.author == "pm"] == [
            "好的，已恢复。"
        ]


async def test_model_error_in_an_sop_step_pauses_and_retries_the_step(settings: Settings) -> None:
    model = ScriptedChatModel(replies=[TimeoutError("slow"), "提纲如下……"])
    settings = settings.model_copy(update={"model_retries": 0})
    async with await open_with(settings, "pm", model) as staff:
        room = await staff.room("err-1", "tech-article")
        events = await collect(room.start())
        assert events[-1].kind == EventKind.WAIT
        assert events[-1].content["reason"] == "model_error"
        resumed = await collect(room.post("重试一下", author="author"))
        pm = [e for e in resumed if e.kind == EventKind.MESSAGE and e.author == "pm"]
        assert pm and pm[0].text == "提纲如下……" and pm[0].meta["step"] == 1


async def test_malformed_and_unknown_tool_calls_go_back_to_the_model(settings: Settings) -> None:
    malformed = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "name": "write_file",
                "args": "{not json",
                "id": "c1",
                "error": "bad JSON",
            }
        ],
    )
    unknown = AIMessage(
        content="", tool_calls=[{"name": "rm_rf", "args": {}, "id": "c2", "type": "tool_call"}]
    )
    model = ScriptedChatModel(replies=[malformed, unknown, "写好了。"])
    async with await open_with(settings, "pm", model) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("写个提纲", author="alice"))
        kinds = [e.content["error"] for e in events if e.kind == EventKind.ERROR]
        assert kinds == ["malformed_tool_call", "unknown_tool"]
        result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
        assert result.content["ok"] is False and "unknown tool 'rm_rf'" in result.content["output"]
        final = [e for e in events if e.kind == EventKind.MESSAGE and e.author == "pm"]
        assert final[-1].text == "写好了。" and final[-1].text_offsets == [0]  # valid calls only
        # The model was shown both errors before its last answer.
        shown = " ".join(str(m.content) for m in model.calls[-1])
        assert "malformed tool call" in shown and "unknown tool 'rm_rf'" in shown


async def test_tool_path_outside_the_workspace_is_refused_to_the_model(settings: Settings) -> None:
    escape = AIMessage(
        content="",
        tool_calls=[
            {
                "name": "write_file",
                "args": {"path": "../../etc/x", "content": "x"},
                "id": "c3",
                "type": "tool_call",
            }
        ],
    )
    model = ScriptedChatModel(replies=[escape, "那我换个路径。"])
    async with await open_with(settings, "pm", model) as staff:
        dm = await staff.dm("pm", "alice")
        events = await collect(dm.post("写文件", author="alice"))
        result = next(e for e in events if e.kind == EventKind.TOOL_RESULT)
        assert result.content["ok"] is False
        assert not (settings.data_dir.parent / "etc").exists()


async def test_network_models_are_refused_when_the_network_is_off(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
        scenario.settings.model = ModelSpec.model_validate("openai:gpt-4o-mini")
        try:
            await staff.room("net-1", scenario)
        except Exception as exc:
            assert "allow_network=False" in str(exc)
        else:
            raise AssertionError("an openai model must not be built with the network off")


async def test_model_selector_that_names_nobody_falls_back_to_round_robin(
    settings: Settings,
) -> None:
    selector = ScriptedChatModel(replies=["I am not sure."])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return selector if who == "selector" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
        scenario.announcement.sop = None  # no SOP: the selector decides from the first message
        scenario.settings.selector = "model"
        room = await staff.room("sel-1", scenario)
        await collect(room.start())
        events = await collect(room.post("大家好", author="author"))
        reply = next(e for e in events if e.kind == EventKind.MESSAGE and not e.meta.get("human"))
        assert reply.meta["why"] == "selector"
        assert "round robin" in reply.meta["note"]
        assert reply.author == scenario.participants[0]
