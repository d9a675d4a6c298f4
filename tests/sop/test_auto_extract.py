"""SOP drafts nobody asked for: the rules, and DMs and rooms that propose them (or must not)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from framework import Event, EventKind, HookContext, SessionEnded, Settings, Staffroom
from framework.extensions.sink import EventSink
from framework.models import ScriptedChatModel
from framework.sessions.events import make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.sop.auto_extract import Trigger, assess, done_report, propose
from framework.sop.model import SopVersion, Status
from framework.specs.model_spec import ModelSpec
from framework.specs.scenario import Scenario

REPORTS = [
    ("检查清单已写好。任务完成！", "任务完成！"),
    ("所有步骤都已完成。有问题随时告诉我。", "所有步骤都已完成。"),
    ("已完成。", "已完成。"),
    ("好的，搞定了！", "好的，搞定了！"),
    ("The checklist is in check.md. Task complete.", "Task complete."),
    ("Everything is finished. Let me know if you need more.", "Everything is finished."),
    ("I have finished the task.", "I have finished the task."),
    ("[simulated] Done.", "Done."),
]
NOT_REPORTS = [
    "已完成第一步，接下来写第二步。",  # a part of the task
    "第一步已完成。",
    "初稿已完成。",
    "Step 1 is done.",
    "I'll get it done.",
    "任务完成了吗？",  # a question
    "Is everything done?",
    "还没完成，我继续。",  # negated
    "The task isn't complete yet.",
    "我会尽快完成",  # a promise
]


@pytest.mark.parametrize(("reply", "sentence"), REPORTS)
def test_a_reply_reporting_the_task_done_is_a_done_report(reply: str, sentence: str) -> None:
    assert done_report(reply) == sentence


@pytest.mark.parametrize("reply", NOT_REPORTS)
def test_a_part_a_question_or_a_negation_is_not_a_done_report(reply: str) -> None:
    assert done_report(reply) is None


def _events(*spec: tuple[EventKind, str, object]) -> list[Event]:
    return [make_event("dm:a@engineer", kind, who, content) for kind, who, content in spec]


def test_work_worth_keeping_needs_three_replies_and_a_working_tool() -> None:
    said = (EventKind.MESSAGE, "engineer", "好的")
    wrote = (EventKind.TOOL_CALL, "engineer", {"name": "write_file"})
    noted = (EventKind.TOOL_CALL, "engineer", {"name": "memory"})
    person = (EventKind.MESSAGE, "alice", "帮我写方案")
    enough = assess(_events(person, wrote, said, said, said), ["engineer"])
    assert enough.worth_keeping and enough.tools == ("write_file",)
    assert not assess(_events(wrote, said, said), ["engineer"]).worth_keeping  # 2 replies
    talk = assess(_events(noted, said, said, said), ["engineer"])
    assert not talk.worth_keeping and talk.tool_calls == 0  # noting a fact is not work
    # A person's messages are not an employee's turns.
    assert assess(_events(wrote, person, person, said), ["engineer"]).work_turns == 1
    # Nor are an employee's words a schedule delivered here from another session.
    delivered = make_event(
        "dm:a@engineer", EventKind.MESSAGE, "engineer", "站会：今天做完了发布",
        meta={"why": "delivered", "delivered": {"schedule": "standup", "fire": "f"}},
    )  # fmt: skip
    assert assess([*_events(wrote, said), delivered, delivered], ["engineer"]).work_turns == 1


def _write(path: str) -> AIMessage:
    call = {"name": "write_file", "args": {"path": path, "content": f"# {path}\n"}, "id": path}
    return AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])


REQUESTS = ["帮我写灰度方案", "再补充回滚预案", "最后列一个上线检查清单"]


def working(last: str) -> list[object]:
    """The engineer writes a file for each request; its third reply is ``last``."""
    return [
        *(_write("plan.md"), "灰度方案写在 plan.md。"),
        *(_write("rollback.md"), "回滚预案写好了。"),
        *(_write("check.md"), last),
    ]


def engineer(replies: list[object]) -> Callable[[ModelSpec, str], ScriptedChatModel | None]:
    model = ScriptedChatModel(replies=replies)
    return lambda spec, who: model if who == "engineer" else None


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def chat(staff: Staffroom, user: str = "alice") -> list[Event]:
    dm = await staff.dm("engineer", user)
    return [e for text in REQUESTS for e in await drain(dm.post(text, author=user))]


def extractions(events: list[Event]) -> list[Event]:
    return [e for e in events if e.kind == EventKind.EXTRACTION]


async def test_a_done_report_after_real_work_proposes_a_draft_once(settings: Settings) -> None:
    factory = engineer(working("检查清单已写好。任务完成！"))
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        shown = extractions(await chat(staff))
        assert len(shown) == 1
        told = shown[0].content
        assert told["extracted"] == "engineer-practice@1" and told["trigger"] == "task_done"
        assert "engineer reported the task done (「任务完成！」)" in told["why"]
        assert told["review"] == (
            "staffroom sop show engineer-practice@1; "
            "staffroom sop approve engineer-practice@1 --by NAME"
        )
        draft = await staff.sops.store.get("engineer-practice", 1)
        assert draft.status == Status.DRAFT and draft.scope == "employee:engineer"
        assert [s.do for s in draft.steps] == REQUESTS
        assert all(s.tools == ("write_file",) for s in draft.steps)
        assert "engineer-practice" not in await staff.recommendations("employee:engineer")
        # Ending the session proposes nothing more: the span was distilled already.
        closed = await (await staff.dm("engineer", "alice")).close()
        assert not extractions(closed)
        assert [v.version for v in await staff.sops.store.versions("engineer-practice")] == [1]


async def test_a_session_that_ends_after_real_work_proposes_a_draft(settings: Settings) -> None:
    factory = engineer(working("检查清单写在 check.md。"))
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        assert not extractions(await chat(staff))  # no report: nothing yet
        dm = await staff.dm("engineer", "alice")
        told = extractions(await dm.close())
        assert [e.content["trigger"] for e in told] == ["session_end"]
        assert "the session ended (closed); 3 employee turns" in told[0].content["why"]
        assert await dm.close() == []  # ended: closing again does nothing
        draft = await staff.sops.store.get("engineer-practice", 1)
        assert draft.change_log[0].by == "auto-extraction"


async def test_talk_without_work_proposes_nothing(staff: Staffroom) -> None:
    # The offline simulator only talks in a DM (no step asks it to write a file).
    dm = await staff.dm("engineer", "alice")
    for text in [*REQUESTS, "好的，任务完成了吗"]:
        await drain(dm.post(text, author="alice"))
    assert not extractions(await dm.close())
    assert "engineer-practice" not in await staff.sops.store.sop_ids()


async def test_a_setting_turns_it_off(settings: Settings) -> None:
    off = settings.model_copy(update={"sop_auto_extract": False})
    factory = engineer(working("任务完成！"))
    async with await Staffroom.open(settings=off, model_factory=factory) as staff:
        assert not extractions(await chat(staff))
        assert not extractions(await (await staff.dm("engineer", "alice")).close())
        assert "engineer-practice" not in await staff.sops.store.sop_ids()


async def test_a_request_already_handled_leaves_nothing_to_propose(settings: Settings) -> None:
    factory = engineer([*working("检查清单写在 check.md。"), "好的，已记下，任务完成。"])
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        await chat(staff)
        dm = await staff.dm("engineer", "alice")
        asked = extractions(await drain(dm.post("把这套做法记下来", author="alice")))
        assert [e.content["extracted"] for e in asked] == ["engineer-practice@1"]
        assert "trigger" not in asked[0].content  # the person's request, not the rules
        assert not extractions(await dm.close())
        assert [v.version for v in await staff.sops.store.versions("engineer-practice")] == [1]


def launch(*, auto_extract: bool = True) -> Scenario:
    """A room with no SOP of its own: the engineer works for alice."""
    return Scenario.model_validate(
        {
            "id": "launch",
            "title": "上线准备",
            "participants": ["engineer"],
            "humans": ["alice"],
            "announcement": "本群目标：完成上线准备。",
            "settings": {"sop_auto_extract": auto_extract},
        }
    )


async def test_a_room_without_an_sop_proposes_scenario_practice(settings: Settings) -> None:
    async with await Staffroom.open(
        settings=settings, model_factory=engineer(working("好。"))
    ) as staff:
        room = await staff.room("l1", launch())
        for text in REQUESTS:
            await drain(room.post(text, author="alice"))
        told = extractions(await room.close())
        assert [e.content["extracted"] for e in told] == ["launch-practice@1"]
        draft = await staff.sops.store.get("launch-practice", 1)
        assert draft.scope == "scenario:launch" and draft.status == Status.DRAFT


async def test_a_scenario_turns_it_off_for_its_rooms(settings: Settings) -> None:
    factory = engineer(working("任务完成。"))
    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("l2", launch(auto_extract=False))
        said = [e for text in REQUESTS for e in await drain(room.post(text, author="alice"))]
        assert not extractions(said) and not extractions(await room.close())


async def test_a_room_driven_by_an_sop_leaves_it_to_the_sop_feedback(staff: Staffroom) -> None:
    room = await staff.room("ta-1", "tech-article")
    await drain(room.start())
    said = await drain(room.post("方向没问题，继续。", author="author"))
    assert any(e.kind == EventKind.TOOL_CALL for e in said)  # the simulator wrote files
    assert not extractions(said) and not extractions(await room.close())
    assert "tech-article-practice" not in await staff.sops.store.sop_ids()


async def test_a_crash_after_storing_the_draft_does_not_store_it_twice(
    settings: Settings, tmp_path: Path
) -> None:
    factory = engineer(working("检查清单写在 check.md。"))
    off = settings.model_copy(update={"sop_auto_extract": False})
    async with await Staffroom.open(settings=off, model_factory=factory) as staff:
        await chat(staff)

        async def crash_before_the_event(ended: SessionEnded, ctx: HookContext) -> None:
            # The draft is stored; its event goes to a log the session never sees; then the
            # process "dies" (an exception that is not recorded ends the close).
            lost = Elsewhere(ctx, EventSink(str(ctx.key), JsonlLog(tmp_path / "lost.jsonl")))
            done_id = f"autosop-{ended.id}"
            await propose(lost, staff.sops, done_id, Trigger.SESSION_END, said=ended.reason)
            raise RuntimeError("killed")

        staff.extensions.hooks.on_session_ended(crash_before_the_event)
        with pytest.raises(RuntimeError, match="killed"):
            await (await staff.dm("engineer", "alice")).close()
    assert [v.version for v in await _versions(settings)] == [1]
    async with await Staffroom.open(settings=settings) as staff:
        told = extractions(await (await staff.dm("engineer", "alice")).close())
        assert [e.content["extracted"] for e in told] == ["engineer-practice@1"]
    assert [v.version for v in await _versions(settings)] == [1]


@dataclass(frozen=True)
class Elsewhere:
    """A hook's context whose events go to another log."""

    ctx: HookContext
    events: EventSink

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ctx, name)


async def _versions(settings: Settings) -> list[SopVersion]:
    async with await Staffroom.open(settings=settings) as staff:
        return list(await staff.sops.store.versions("engineer-practice"))
