"""A parallel SOP step fans out with LangGraph Send, and the room moves on once all lanes join."""

from __future__ import annotations

import shutil
from pathlib import Path

from paths import ROOT

from framework import EventKind, Settings, Staffroom

PARALLEL = ROOT / "tests" / "fixtures" / "parallel_project"


async def test_parallel_step_runs_every_speaker_then_joins(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(ROOT / "agents", project / "agents")
    shutil.copytree(ROOT / "scenarios", project / "scenarios")
    shutil.copytree(PARALLEL / "sop_library", project / "sop_library")
    settings = Settings(data_dir=tmp_path / "d", project_dir=project, allow_network=False)
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.room("par-1", "tech-article")
        events = [e async for e in room.start()]
    replies = [e for e in events if e.kind == EventKind.MESSAGE]
    assert (replies[0].author, replies[0].meta["step"]) == ("pm", 1)
    lanes = {e.author for e in replies if e.meta["step"] == 2}
    assert lanes == {"engineer", "designer"}
    assert all("-p" in e.id for e in replies if e.meta["step"] == 2)  # one lane each
    assert (replies[-1].author, replies[-1].meta["step"]) == ("pm", 3)
    outcome = events[-1]
    assert outcome.kind == EventKind.OUTCOME and outcome.content["reason"] == "sop_complete"
    assert outcome.content["turns"] == 4 and outcome.content["steps_done"] == 3
