"""Scheduled fires on a real model (Gemma 3 270M on llama.cpp): a quiet morning check and a
stand-up each end, recorded as done, quiet or failed with a reason; never stuck, never a
silent fallback. Run with ``make test-llm``; what each fire ended as is printed (``-s``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from paths import ROOT

from framework import Settings, Staffroom
from framework.schedules.fire_store import open_fire_store
from framework.schedules.runner import Runner
from framework.schedules.scheduler import Scheduler
from framework.sessions.events import EventKind
from framework.sessions.keys import SessionKey
from framework.specs.model_spec import ModelSpec

pytestmark = pytest.mark.llm

SCHEDULES = """\
timezone: Europe/London
schedules:
  morning-check:
    cron: "0 8 * * *"
    quiet: true
    start: {dm: {employee: pm, user: lead, message: "Morning check: anything for today?"}}
  standup:
    cron: "30 9 * * mon-fri"
    retries: 1
    start: {dm: {employee: engineer, user: lead, message: "Stand-up: what is next for you?"}}
"""


async def test_scheduled_fires_end_on_a_real_model(
    tmp_path: Path, llm_url: str, llm_model: str
) -> None:
    project = tmp_path / "project"
    for folder in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / folder, project / folder)
    (project / "schedules.yaml").write_text(SCHEDULES, encoding="utf-8")
    spec = ModelSpec.model_validate(
        {
            "provider": "openai",
            "name": llm_model,
            "base_url": llm_url,
            "context_window": 4096,
            "max_output_tokens": 128,
            "system_role": "fold",
        }
    )
    settings = Settings(
        data_dir=tmp_path / "data", project_dir=project, allow_network=False,
        model_override=spec, model_backoff=0.2,
    )  # fmt: skip
    async with await Staffroom.open(settings=settings) as staff:
        store = await open_fire_store(settings.data_dir, None)
        scheduler = Scheduler(staff, store, Runner(staff))
        try:
            for name in ("morning-check", "standup"):
                assert await scheduler.run_now(name, "llm") is not None
            await scheduler.drain()
            fires = {n: await store.get(f"{n}@now-llm") for n in ("morning-check", "standup")}
        finally:
            await store.close()
        dm = staff.sessions.log(SessionKey.parse("dm:lead@pm")).read_all()
    for name, fire in fires.items():
        assert fire is not None, name
        print(f"{name}: {fire.state} ({fire.detail})")
        assert fire.state in ("done", "quiet", "failed"), fire  # ended, not left running
        if fire.state == "failed":
            assert fire.detail, "a failure says why"
    asked = [e for e in dm if e.kind == EventKind.MESSAGE and e.from_person]
    assert "Open items to check: none." in asked[0].text  # the evidence the model judged on
    answered = [e for e in dm if e.kind == EventKind.MESSAGE and not e.from_person]
    quiet = fires["morning-check"]
    assert quiet is not None
    # Recorded quiet exactly when the model's whole reply was the marker.
    assert (quiet.state == "quiet") == bool(answered and answered[-1].meta.get("nothing_to_report"))
