"""The gateway (the server's and the adapters' way in) opens rooms on a scenario id of the
project's catalog, and rooms resume on the id their log records: never on a file a caller
or the log names (issue 20, items 1 and 8)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from backend import stored_ledger
from rooms_at_rest import opened

from framework import Settings, Staffroom
from framework.errors import ScenarioError, UnknownNameError
from framework.serving import Gateway

ROGUE = """\
id: desk-enqueue
title: Rogue desk
participants: [pm]
humans: [alice]
announcement:
  text: Not the project's scenario.
"""


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's working directory, holding a key file and a scenario of no project."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    (folder / "openai_key.txt").write_text("sk-live-0123456789abcdef\n", "utf-8")
    (folder / "rogue.yaml").write_text(ROGUE.replace("desk-enqueue", "rogue"), "utf-8")
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize(
    "name", ["openai_key.txt", "rogue.yaml", "rogue", "missing.yaml", "{cwd}/rogue.yaml"]
)
async def test_a_room_opens_on_a_catalog_id_only_never_a_file(
    settings: Settings, desk: Callable[..., str], cwd: Path, name: str
) -> None:
    desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        with pytest.raises(UnknownNameError) as caught:
            await gateway.open_room("x", name.format(cwd=cwd))
        sessions = gateway.sessions()
        await gateway.close()
    error = caught.value
    said = f"{error.message} {error.fix}"
    assert error.field == "scenario" and "desk-enqueue" in said, "the known ids are listed"
    assert "sk-live" not in said and "Rogue" not in said, "no file's content"
    assert "not found" not in said, "nothing about which files exist"
    assert str(settings.project_dir) not in said, "no folder of the server's machine"
    assert sessions == [], "nothing was opened"


async def test_an_unknown_scenario_id_gets_a_suggestion(
    settings: Settings, desk: Callable[..., str]
) -> None:
    desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        with pytest.raises(UnknownNameError, match="did you mean 'desk-enqueue'"):
            await gateway.open_room("x", "desk-enqeue")
        room = await gateway.open_room("x", "desk-enqueue")
        await gateway.close()
    assert room.scenario_id == "desk-enqueue"


async def test_a_scenario_whose_file_does_not_load_is_refused_without_its_content(
    settings: Settings, desk: Callable[..., str], project: Path
) -> None:
    desk()
    (project / "scenarios" / "broken.yaml").write_text(
        "id: broken\ntitle: t\nparticipants: sk-live-0123456789\n", "utf-8"
    )
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        with pytest.raises(ScenarioError) as caught:
            await gateway.open_room("x", "broken")
        await gateway.close()
    said = f"{caught.value.message} {caught.value.fix}"
    assert "scenarios/broken.yaml" in said and "desk-enqueue" in said
    assert "sk-live" not in said and str(project) not in said


def rewrite_entry(log: Path, **content: object) -> None:
    """Change the entry event's content in a room's log, as an older version wrote it."""
    lines = log.read_text("utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:
        if event.get("meta", {}).get("entry"):
            event["content"].update(content)
    log.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events), "utf-8")


async def test_a_room_resumes_on_its_scenario_id_not_the_file_its_log_names(
    settings: Settings, desk: Callable[..., str], tmp_path: Path
) -> None:
    scenario = desk()
    key = await opened(settings, "r1", scenario)
    # An old log names its scenario's file by absolute path; a rogue file is there now.
    rogue = tmp_path / "elsewhere" / "desk.yaml"
    rogue.parent.mkdir()
    rogue.write_text(ROGUE, "utf-8")
    rewrite_entry(settings.data_dir / "sessions" / "room:r1.jsonl", scenario_source=str(rogue))
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        resumed = await gateway.session(key)
        result = await gateway.post(key, "@engineer still there?", author="bob")
        await gateway.close()
    assert resumed.participants == ["pm", "engineer", "designer"], "the project's scenario"
    assert [e.author for e in result.events if not e.meta.get("human")] == ["engineer"]


async def test_the_entry_names_its_scenario_file_relative_to_the_project(
    settings: Settings, desk: Callable[..., str]
) -> None:
    scenario = desk()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        room = await gateway.open_room("r2", scenario)
        await gateway.close()
        entry = next(e for e in room.history() if e.meta.get("entry"))
    assert entry.content["scenario"] == "desk-enqueue"
    assert entry.content["scenario_source"] == "scenarios/desk_enqueue.yaml"
    assert str(settings.project_dir) not in entry.to_json()


OUTSIDE = ROGUE.replace("desk-enqueue", "outside")


async def test_a_room_on_a_file_outside_the_project_resumes_from_the_cli_only(
    settings: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "team" / "scenarios" / "outside.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(OUTSIDE, "utf-8")
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("o1", path)  # what `staffroom run <file> --room o1` does
        async for _ in room.start():
            pass
        entry = next(e for e in room.history() if e.meta.get("entry"))
    assert entry.content["scenario_source"] == str(path.resolve())
    async with await Staffroom.open(settings=settings) as staff:
        with pytest.raises(UnknownNameError, match="not a scenario of this project") as caught:
            await staff.session("room:o1")  # the gateway's way: never a file
        assert str(path) not in f"{caught.value.message} {caught.value.fix}"
        gateway = await Gateway.open(staff)
        with pytest.raises(UnknownNameError):
            await gateway.session("room:o1")
        await gateway.close()
        cli = await staff.session("room:o1", scenario_file=True)  # close, consolidate, doctor
        assert cli.scenario_id == "outside" and cli.participants == ["pm"]


async def test_a_queued_message_of_a_room_whose_scenario_left_does_not_stop_the_others(
    settings: Settings, desk: Callable[..., str], project: Path
) -> None:
    gone, kept = desk("enqueue"), desk("reject")
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        await gateway.open_room("r3", gone)
        await gateway.open_room("r4", kept)
        await gateway.close()
    # What a killed process leaves: a message queued in each room, never run.
    async with stored_ledger(settings) as ledger:
        for room in ("r3", "r4"):
            claim = {"author": "bob", "text": "@pm ping", "state": "queued"}
            await ledger.claim(f"room:{room}", f"msg:q-{room}", message_id=f"q-{room}", **claim)
    (project / "scenarios" / "desk_enqueue.yaml").unlink()
    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)  # runs the queued messages it can
        await gateway.close()
        history = (await gateway.session("room:r4")).history()
    assert [e.author for e in history if e.kind == "message"] == ["bob", "pm"]
