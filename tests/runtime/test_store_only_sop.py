"""The SOP store is the source of truth: an SOP published only there drives a room.

Before, the scenario check looked only at the card library: a store-only SOP (an extracted
practice, once approved) was an "unknown SOP" while ``sops.best`` returned it.
"""

from __future__ import annotations

import pytest

from framework import EventKind, Staffroom
from framework.errors import ScenarioError
from framework.sop.model import SopVersion, Status, Step
from framework.specs.scenario import Scenario


def scenario(sop_id: str) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "store-only-room",
            "title": "store only",
            "participants": ["pm", "engineer"],
            "humans": ["author"],
            "announcement": {"text": "目标：试一下", "sop": f"{{{{ best_sop('{sop_id}') }}}}"},
        }
    )


async def publish(staff: Staffroom, sop_id: str, speakers: list[str]) -> None:
    steps = tuple(Step(speakers=(s,), do=f"{s} 做第 {i} 步") for i, s in enumerate(speakers, 1))
    version = SopVersion(sop_id, 1, "试一下", "global", steps, Status.PUBLISHED)
    await staff.sops.store.add_version(version)


async def test_a_store_only_published_sop_drives_a_room(staff: Staffroom) -> None:
    await publish(staff, "store-only", ["engineer", "pm"])
    room = await staff.room("so-1", scenario("store-only"))
    events = [e async for e in room.start()]
    assert events[0].content["sop"] == "store-only@1"
    spoke = [e.author for e in events if e.kind == EventKind.MESSAGE]
    assert spoke == ["engineer", "pm"]


async def test_a_store_only_sop_with_a_stray_speaker_names_the_scenario_line(
    staff: Staffroom,
) -> None:
    await publish(staff, "stray", ["designer"])
    with pytest.raises(ScenarioError) as raised:
        await staff.room("so-2", scenario("stray"))
    assert "designer" in str(raised.value) and "stray@1" in str(raised.value)
