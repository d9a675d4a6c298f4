"""Long tool output is spilled and digested; the JSONL replays exactly what the model saw."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from langchain_core.messages import AIMessage, ToolMessage

from framework import Event, EventKind, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.runtime.replay import replay_turns
from framework.sessions.events import make_event
from framework.sessions.workspace import Workspace
from framework.specs.model_spec import ModelSpec
from framework.tools.workspace import workspace_tools


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def call(name: str, args: dict[str, object], call_id: str, text: str = "") -> AIMessage:
    return AIMessage(
        content=text, tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


async def test_long_output_is_spilled_digested_and_replayed_exactly(settings: Settings) -> None:
    big = "".join(f"第 {i:04d} 行：日志内容 status=ok latency={i % 97}ms\n" for i in range(600))
    quoted = "第 0300 行：日志内容 status=ok latency=9ms"
    model = ScriptedChatModel(
        replies=[
            call("read_file", {"path": "logs/big.log", "limit": 20000}, "c1", "先看日志。"),
            call(
                "read_file",
                {"path": "logs/big.log", "limit": 20000},
                "c2",
                f"注意「{quoted}」这一行。",
            ),
            "看完了，第 300 行正常。",
        ]
    )

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "engineer" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        dm = await staff.dm("engineer", "alice")
        dm.workspace.write_text("logs/big.log", big)
        events = await drain(dm.post("看一下日志", author="alice"))
        workspace = dm.workspace

        results = [e for e in events if e.kind == EventKind.TOOL_RESULT]
        assert [r.content["output"] for r in results] == [big[:20000]] * 2  # raw, whole
        seen = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
        budget = dm.settings.tool_output_budget
        assert all(len(str(m.content)) <= budget for m in seen)
        first = str(seen[0].content)
        assert "tool-outputs/" in first and first.startswith("第 0000 行")
        spilled = workspace.read_text(first.split('path="')[1].split('"')[0])
        assert spilled == big[:20000]
        # The second call quoted a line from the middle of the first output: it survives.
        assert quoted in str(seen[1].content)

        # Replay from the JSONL alone gives the same order and the same views.
        (turn,) = replay_turns(dm.history(), workspace)
        kinds = [kind for kind, _ in turn.segments]
        assert kinds == ["text", "call", "result", "text", "call", "result", "text"]
        assert [v for k, v in turn.segments if k == "result"] == [str(m.content) for m in seen]
        assert "".join(v for k, v in turn.segments if k == "text") == events[-1].text


async def test_file_tools_refuse_paths_outside_the_workspace(settings: Settings) -> None:
    async with await Staffroom.open(settings=settings) as staff:
        dm = await staff.dm("engineer", "alice")
        tools, root = workspace_tools(dm.workspace), dm.workspace.root
        root.mkdir(parents=True, exist_ok=True)
        outside = settings.data_dir / "secret.txt"
        outside.write_text("top secret", encoding="utf-8")
        (root / "link").symlink_to(outside)
        for args in (
            {"path": "../secret.txt"},
            {"path": str(outside)},
            {"path": "link"},
        ):
            result = await tools["read_file"].call(args)
            assert result.ok is False and "top secret" not in result.output
            assert "workspace" in result.output
        written = await tools["write_file"].call({"path": "../../x.txt", "content": "x"})
        assert written.ok is False
        assert not (settings.data_dir.parent / "x.txt").exists()


def test_replay_leaves_out_what_a_schedule_delivered_from_elsewhere(tmp_path: Path) -> None:
    said = make_event("room:team", EventKind.MESSAGE, "pm", "Released the beta.")
    delivered = make_event(
        "room:team", EventKind.MESSAGE, "engineer", "Stand-up: the build is green.",
        meta={"why": "delivered", "delivered": {"schedule": "standup", "fire": "f"}},
    )  # fmt: skip
    turns = replay_turns([said, delivered], Workspace(tmp_path / "ws"))
    assert [t.author for t in turns] == ["pm"]
