"""Feedback in people's words, through a real room: read, shown back, confirmed, counted.

The room's first employee (pm) answers from a script, as a real model would, with the JSON
``read_remark.j2`` asks for; the other employees are the offline simulator. The SOP pauses
after steps 1 and 2 (a step that asks people); a remark read as a correction never pauses
it: its person confirms it later, by a reply to it or by naming it ("对，反馈 1").
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

from cli_in_process import Cli
from rich.console import Console

from framework import Event, EventKind, Room, Settings, Staffroom
from framework.models import ScriptedChatModel
from framework.specs.model_spec import ModelSpec
from framework.surfaces.cli.render import render_event

REMARK = "配图应该在写正文之前"
ORDER = json.dumps({"corrections": [{"kind": "order", "step": 3, "before": 2}]})
MOVE = json.dumps({"edits": [{"op": "move", "step": 3, "to": 2, "reason": "作者要求先配图"}]})


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


def shown(events: list[Event]) -> str:
    """The transcript ``staffroom run`` / ``staffroom chat`` prints for ``events``."""
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)
    for event in events:
        render_event(console, event)
    return out.getvalue()


async def open_room(settings: Settings, model: ScriptedChatModel) -> tuple[Staffroom, Room]:
    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    staff = await Staffroom.open(settings=settings, model_factory=factory)
    # tech-article@2: as @1, but it also pauses after step 1.
    v1 = await staff.sops.store.get("tech-article", 1)
    steps = (replace(v1.steps[0], waits_for_input=True), *v1.steps[1:])
    await staff.sops.store.add_version(replace(v1, version=2, steps=steps, change_log=()))
    await staff.sops.store.publish("tech-article", 2)
    await staff.sops.store.deprecate("tech-article", 1, "test: two pauses")
    room = await staff.room("remarks-1", "tech-article")
    started = await drain(room.start())
    assert started[0].content["sop"] == "tech-article@2"
    return staff, room


async def finish(room: Room, events: list[Event]) -> list[Event]:
    """Say "继续" at every pause until the run closes; all the events."""
    while not any(e.kind == EventKind.FEEDBACK for e in events):
        events += await drain(room.post("继续", author="author"))
    return events


def feedback(events: list[Event]) -> dict[str, object]:
    found: dict[str, object] = next(e for e in events if e.kind == EventKind.FEEDBACK).content
    return found


def waits(events: list[Event]) -> list[str]:
    return [str(e.content["reason"]) for e in events if e.kind == EventKind.WAIT]


async def test_a_remark_confirmed_by_name_counts_and_the_room_never_waits_for_it(
    settings: Settings,
) -> None:
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, "定稿完成。", MOVE])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post(REMARK, author="author"))
        understood = next(e for e in said if e.kind == EventKind.REMARK)
        assert understood.content["status"] == "understood"
        transcript = shown(said)
        assert "◇ author: 反馈 1，理解为：第 3 步（配图方案）移到第 2 步之前" in transcript
        assert "运行继续，不等待" in transcript and "对，反馈 1" in transcript
        # The model saw the run's steps, numbered, and the remark.
        prompt = str(model.calls[1][0].content)
        assert "3. designer: 配图方案" in prompt and REMARK in prompt
        # The run went on: step 2 was done, and the room waits for the step, not the remark.
        assert [e.meta.get("step") for e in said if e.kind == EventKind.SOP_STEP] == [2]
        assert waits(said) == ["waits_for_input"]

        rest = await finish(room, await drain(room.post("对，反馈 1", author="author")))
        assert "◇ 反馈 1 已确认，计入本次运行：第 3 步（配图方案）移到第 2 步之前" in shown(rest)
        assert feedback(rest)["corrections"] == 1
        revision = next(e for e in rest if e.kind == EventKind.REVISION)
        sop_id, version = revision.content["sop"].split("@")
        draft = await staff.sops.store.get(sop_id, int(version))
        assert [s.speakers[0] for s in draft.steps] == ["pm", "designer", "engineer", "pm"]
        outcome = (await staff.sops.store.outcomes("tech-article@2"))[-1]
        assert [(c.kind, c.step, c.before, c.by) for c in outcome.corrections] == [
            ("order", 3, 2, "author")
        ]


async def test_a_bare_yes_after_a_remark_does_not_count_it(settings: Settings) -> None:
    # "对" answers the room's wait (meant for the employees), not the remark.
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, "定稿完成。"])
    staff, room = await open_room(settings, model)
    async with staff:
        await drain(room.post(REMARK, author="author"))
        rest = await finish(room, await drain(room.post("对", author="author")))
        assert not [
            e
            for e in rest
            if e.kind == EventKind.REMARK and e.content["status"] in ("confirmed", "dropped")
        ]
        assert "◇ 未计入本次运行的结果：反馈 1（尚未确认）；24 小时内确认仍会计入" in shown(rest)
        assert feedback(rest)["corrections"] == 0
        assert not [e for e in rest if e.kind == EventKind.REVISION]


async def test_a_reply_to_the_remark_counts_it(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, "定稿完成。", MOVE])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post(REMARK, author="author"))
        understood = next(e for e in said if e.kind == EventKind.REMARK)
        reply = await drain(room.post("对", author="author", meta={"reply_to": understood.id}))
        confirmed = next(e for e in reply if e.kind == EventKind.REMARK)
        assert confirmed.content["status"] == "confirmed"
        assert confirmed.content["understood"] == understood.id
        rest = await finish(room, reply)
        assert feedback(rest)["corrections"] == 1


async def test_a_denied_remark_does_not_count(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, "定稿完成。"])
    staff, room = await open_room(settings, model)
    async with staff:
        await drain(room.post(REMARK, author="author"))
        rest = await finish(room, await drain(room.post("不对，反馈 1", author="author")))
        assert "◇ 反馈 1 未计入：第 3 步（配图方案）移到第 2 步之前（你说这不是你的意思）" in shown(
            rest
        )
        assert feedback(rest)["corrections"] == 0
        assert not [e for e in rest if e.kind == EventKind.REVISION]


async def test_a_reader_that_reads_every_remark_as_a_correction_never_stops_the_room(
    settings: Settings,
) -> None:
    # The worst case: each remark at each pause is read as a correction and never answered.
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, ORDER, "定稿完成。"])
    staff, room = await open_room(settings, model)
    async with staff:
        first = await drain(room.post(REMARK, author="author"))
        second = await drain(room.post("先出配图再写正文，下次注意顺序", author="author"))
        events = first + second
        assert [e.content["status"] for e in events if e.kind == EventKind.REMARK] == [
            "understood",
            "understood",
            "unconfirmed",
        ]
        assert waits(events) == ["waits_for_input"]  # the step's own pause, nothing else
        assert feedback(events)["corrections"] == 0  # the run ended on the second post
        status = await room.status()
        assert not status.waiting and status.phase == "open"


async def test_an_unusable_answer_is_retried_then_the_fallback_says_how_to_say_it(
    settings: Settings,
) -> None:
    wrong = json.dumps({"corrections": [{"kind": "order", "step": 9, "before": 2}]})
    model = ScriptedChatModel(replies=["提纲已写好。", "好的，我会调整。", wrong, "定稿完成。"])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post(REMARK, author="author"))
        # The retry showed the model what was wrong with its answer.
        retry = str(model.calls[2][-1].content)
        assert "cannot be used: not JSON" in retry
        fallback = next(e for e in said if e.kind == EventKind.FALLBACK)
        assert fallback.content["what"] == "remark"
        assert "step 9 is not a step number 1..4" in fallback.content["reason"]
        assert "纠正: order 3 before 2" in fallback.content["reason"]
        assert "⚠ fallback: remark → not counted" in shown(said)
        assert not [e for e in said if e.kind == EventKind.REMARK]
        rest = await finish(room, await drain(room.post("对", author="author")))
        assert feedback(rest)["corrections"] == 0


def test_the_simulator_says_once_per_run_that_it_reads_no_free_remarks(
    cli: Cli, tmp_path: Path
) -> None:
    script = tmp_path / "s.txt"
    lines = [REMARK, "继续", "漏了合规自检", "辛苦了", "第三步多余"]
    script.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    args = ["run", "tech-article", "--room", "r1", "--script", str(script)]
    run = cli(*args, data=tmp_path / "d")
    assert run.code == 0, run.err
    assert run.out.count("⚠ fallback: remark") == 1, run.out
    assert "⚠ fallback: remark → not counted (离线模拟器不读自由表述的反馈" in run.out
    assert "纠正: order 3 before 2" in run.out  # how to say it so that it counts
    assert "(corrections 0," in run.out


async def test_a_remark_open_when_the_run_ends_still_counts_if_confirmed_in_the_window(
    settings: Settings,
) -> None:
    nothing = json.dumps({"edits": []})
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, "定稿完成。", MOVE, nothing])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post(REMARK, author="author"))
        assert "理解为" in shown(said)
        ended = await drain(room.post("结束会议", author="author"))  # the stop word ends the run
        transcript = shown(ended)
        assert transcript.index("未计入本次运行的结果：反馈 1") < transcript.index("◆ outcome")
        assert feedback(ended)["corrections"] == 0
        confirmed = await drain(room.post("反馈 1 对", author="author"))
        late = next(e for e in confirmed if e.kind == EventKind.FEEDBACK)
        assert late.content["late"] is True and late.content["corrections"] == 1


async def test_a_remark_the_model_reads_as_no_correction_counts_nothing(settings: Settings) -> None:
    none = json.dumps({"corrections": []})
    model = ScriptedChatModel(replies=["提纲已写好。", none, "定稿完成。"])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post("正文之前的提纲我很满意", author="author"))
        remark = next(e for e in said if e.kind == EventKind.REMARK)
        assert remark.content["status"] == "none"
        assert "◇ 没有读出对 SOP 步骤的纠正" in shown(said)
        rest = await finish(
            room, await drain(room.post("对", author="author"))
        )  # nothing to confirm
        assert not [e for e in rest if e.kind == EventKind.REMARK]
        assert feedback(rest)["corrections"] == 0


async def test_a_remark_after_the_run_closed_counts_for_that_run(settings: Settings) -> None:
    # The run closes with no word from the author; the remark comes afterwards.
    nothing = json.dumps({"edits": []})
    model = ScriptedChatModel(replies=["提纲已写好。", "定稿完成。", nothing, ORDER, MOVE])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("remarks-late", "tech-article")
        await finish(room, await drain(room.start()))
        said = await drain(room.post(REMARK, author="author"))
        assert "反馈 1，理解为：第 3 步（配图方案）移到第 2 步之前" in shown(said)
        assert not [
            e for e in await drain(room.post("对", author="author")) if e.kind == EventKind.FEEDBACK
        ]  # a bare yes confirms nothing
        confirmed = await drain(room.post("对，反馈 1", author="author"))
        late = next(e for e in confirmed if e.kind == EventKind.FEEDBACK)
        assert late.content["late"] is True and late.content["corrections"] == 1
        outcome = (await staff.sops.store.outcomes("tech-article@1"))[-1]
        assert [(c.kind, c.step, c.before) for c in outcome.corrections] == [("order", 3, 2)]


async def test_after_the_close_only_the_runs_people_are_read(settings: Settings) -> None:
    nothing = json.dumps({"edits": []})
    model = ScriptedChatModel(replies=["提纲已写好。", "定稿完成。", nothing])

    def factory(spec: ModelSpec, who: str) -> ScriptedChatModel | None:
        return model if who == "pm" else None

    async with await Staffroom.open(settings=settings, model_factory=factory) as staff:
        room = await staff.room("remarks-outsider", "tech-article")
        await finish(room, await drain(room.start()))
        calls = len(model.calls)
        said = await drain(room.post(REMARK, author="mallory"))  # took no part in the run
        assert not [e for e in said if e.kind in (EventKind.REMARK, EventKind.FEEDBACK)]
        assert len(model.calls) == calls, "nobody's model was asked to read it"


async def test_an_english_remark_is_answered_in_english(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["提纲已写好。", ORDER, "定稿完成。", MOVE])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post("The figures should come before the draft", author="author"))
        transcript = shown(said)
        assert (
            "◇ author: remark 1, understood as: move step 3 (配图方案) before step 2" in transcript
        )
        assert "the run goes on; to count it, reply to this or say “yes, remark 1”" in transcript
        prompt = str(model.calls[1][0].content)
        assert prompt.startswith("You read one message a person wrote")
        rest = await finish(room, await drain(room.post("Yes, remark 1.", author="author")))
        assert "◇ remark 1 confirmed, counted in this run: move step 3" in shown(rest)
        assert feedback(rest)["corrections"] == 1


async def test_an_answer_naming_no_open_remark_is_told_so(settings: Settings) -> None:
    model = ScriptedChatModel(replies=["提纲已写好。", "定稿完成。"])
    staff, room = await open_room(settings, model)
    async with staff:
        said = await drain(room.post("yes, remark 3", author="author"))  # this run has none
        assert "◇ this answer names no remark open for an answer here" in shown(said)
        rest = await finish(room, said)
        assert feedback(rest)["corrections"] == 0
