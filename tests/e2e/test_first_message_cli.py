"""A room's first message: given at its start (``run --message``, ``Room.start(message=...)``),
it is what the first step works on, said by the scenario's first human unless named, and the
same start again posts it once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_in_process import Cli
from stub_openai import StubOpenAI

from framework import EventKind, Staffroom

TICKET = "Ticket #4411 from Acme Corp - checkout API returns HTTP 502 since 09:12 UTC."


def log_of(data: Path, room: str) -> list[dict[str, Any]]:
    path = data / "sessions" / f"room:{room}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def request_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []))


def test_run_message_reaches_the_first_steps_prompt(cli: Cli, tmp_path: Path) -> None:
    data = str(tmp_path / "d")
    with StubOpenAI(default_text="Outline written.") as stub:
        model = f"openai:gemma@{stub.base_url}"
        args = ("run", "tech-article", "--room", "t1", "--data-dir", data, "--model", model)
        done = cli(*args, "--message", TICKET)
        assert done.code == 0, done.out + done.err
        first_prompt = request_text(stub.completions[0].body)
        calls = len(stub.completions)
        # The same command again (a rerun after a kill, say) posts nothing twice.
        again = cli(*args, "--message", TICKET)
        assert again.code == 0, again.out + again.err
    assert TICKET in first_prompt, "step 1's model call did not see the room's input"
    assert "立题与提纲" in first_prompt, "the first call is step 1's turn"
    events = log_of(tmp_path / "d", "t1")
    said = [e for e in events if e["kind"] == "message" and e["meta"].get("human")]
    assert [(e["author"], e["content"]) for e in said] == [("author", TICKET)]
    assert said[0]["meta"]["opening"] is True
    kinds = [e["kind"] for e in events]
    assert kinds.index("message") < kinds.index("sop_step"), "posted before step 1 ran"
    assert len(stub.completions) == calls, "the rerun called no model for the old message"


def test_message_file_names_its_author_and_keeps_its_lines(cli: Cli, tmp_path: Path) -> None:
    ticket = tmp_path / "ticket.txt"
    ticket.write_text(f"author: {TICKET}\nSteps to reproduce:\n  POST /checkout\n", "utf-8")
    data = str(tmp_path / "d")
    done = cli(
        "run", "tech-article", "--room", "f1", "--data-dir", data, "--message-file", str(ticket)
    )
    assert done.code == 0, done.out + done.err
    [first] = [e for e in log_of(tmp_path / "d", "f1") if e["kind"] == "message"][:1]
    assert first["author"] == "author"
    assert first["content"] == f"{TICKET}\nSteps to reproduce:\n  POST /checkout"


def test_a_bad_first_message_is_refused_before_the_room_runs(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "d"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n \n", encoding="utf-8")
    base = ("run", "tech-article", "--room", "bad", "--data-dir", str(data))
    for extra, where in [
        (("--message-file", str(empty)), "--message-file"),
        (("--message-file", str(tmp_path / "missing.txt")), "no such script file"),
        (("--message", "hi", "--message-file", str(empty)), "once"),
        (("--message", "author:   "), "says nothing"),
    ]:
        refused = cli(*base, *extra)
        assert refused.code == 2, (extra, refused.out, refused.err)
        assert where in refused.err and "Traceback" not in refused.err, refused.err
    assert not (data / "sessions" / "room:bad.jsonl").exists(), "no room ran"


def test_a_bad_first_message_is_refused_in_the_projects_language(cli: Cli, tmp_path: Path) -> None:
    project = tmp_path / "p"
    assert cli("init", str(project), "--language", "zh").code == 0  # staffroom.yaml: zh
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    run = ("run", "note", "--project", str(project), "--data-dir", str(tmp_path / "d"))
    refused = cli(*run, "--message-file", str(empty))
    assert refused.code == 2 and "第一条消息是空的" in refused.err, refused.err
    english = cli(*run, "--message-file", str(empty), env={"STAFFROOM_LANGUAGE": "en"})
    assert "the first message is empty" in english.err, english.err


async def test_room_start_with_a_message_enters_with_it(staff: Staffroom) -> None:
    room = await staff.room("api-1", staff.catalog.scenario("tech-article"))
    events = [e async for e in room.start(TICKET)]
    kinds = [e.kind for e in events]
    assert events[0].kind == EventKind.MESSAGE and events[0].author == "author"
    assert events[0].meta["opening"] is True
    assert kinds.index(EventKind.PLAN) < kinds.index(EventKind.SOP_STEP)
    assert (await room.status()).waiting, "it ran its steps up to the first wait"
    again = [e async for e in room.start(TICKET)]
    assert again == [], "the same start posts nothing and runs nothing again"
    humans = [e for e in room.history() if e.kind == EventKind.MESSAGE and e.meta.get("human")]
    assert len(humans) == 1


async def test_the_first_message_is_input_not_feedback_on_the_sop(staff: Staffroom) -> None:
    # Words of step 1 ("读者", "提纲") make it look like a remark on the steps: it is not one.
    brief = "主题：用 SQLite 做本地优先应用的数据层，读者是后端工程师，先给个提纲。"
    room = await staff.room("brief-1", staff.catalog.scenario("tech-article"))
    events = [e async for e in room.start(brief)]
    opening = events[0].id
    read = [e for e in room.history() if e.id.startswith(f"{opening}-remark")]
    assert read == [], "the room's input was read as a correction of its SOP"
