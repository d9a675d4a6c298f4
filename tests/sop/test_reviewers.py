"""Reviews are enforced: a draft is published only once the people who must approve it did."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import aiosqlite
import pytest

from framework import Event, EventKind, Staffroom
from framework.errors import InputError
from framework.sop.model import SopVersion, Status, Step
from framework.sop.store import SopStore

V1 = SopVersion(
    "tech-article",
    1,
    "写文章",
    "scenario:tech-article",
    (Step(("pm",), "提纲"), Step(("engineer",), "评估")),
)
CORRECTION = "纠正: order 3 before 2 先定配图再写正文\n评分: 2/5"


async def drain(events: AsyncIterator[Event]) -> list[Event]:
    return [e async for e in events]


async def propose(staff: Staffroom, room: str, **settings: object) -> dict[str, object]:
    """Run the tech-article room once with a correction; the proposal's revision event."""
    scenario = staff.catalog.scenario("tech-article").model_copy(deep=True)
    scenario.settings = scenario.settings.model_copy(update=settings)
    opened = await staff.room(room, scenario)
    await drain(opened.start())
    events = await drain(opened.post(CORRECTION, author="author"))
    return next(e for e in events if e.kind == EventKind.REVISION).content


async def test_a_proposed_draft_waits_for_the_reviewers_its_scenario_names(
    staff: Staffroom,
) -> None:
    proposed = await propose(staff, "rev-1", sop_reviewers=["author", "team-lead"])
    assert proposed["sop"] == "tech-article@2" and proposed["status"] == "draft"
    store = staff.sops.store
    assert await store.reviewers("tech-article", 2) == ["author", "team-lead"]

    # Nobody approved: refused, naming both and the command that fixes it; nothing changed.
    with pytest.raises(InputError, match="needs approval from: author, team-lead") as err:
        await staff.sops.publish("tech-article", 2)
    assert "staffroom sop approve tech-article@2 --by author" in (err.value.fix or "")
    assert (await store.get("tech-article", 2)).status is Status.DRAFT
    assert await store.trials("tech-article") == []

    await store.approve("tech-article", 2, "author")
    with pytest.raises(InputError, match=r"(?m)needs approval from: team-lead$"):
        await staff.sops.publish("tech-article", 2)
    await store.approve("tech-article", 2, "team-lead")
    published = await staff.sops.publish("tech-article", 2)
    assert published.status is Status.PUBLISHED


async def test_require_adds_reviewers_to_those_recorded(staff: Staffroom) -> None:
    await propose(staff, "rev-2", sop_reviewers=["author"])
    await staff.sops.store.approve("tech-article", 2, "author")
    with pytest.raises(InputError, match=r"(?m)needs approval from: manager$"):
        await staff.sops.publish("tech-article", 2, required=["manager"])
    await staff.sops.store.approve("tech-article", 2, "manager")
    assert (await staff.sops.publish("tech-article", 2, required=["manager"])).status == "published"


async def test_a_draft_with_no_reviewers_recorded_needs_one_approval(staff: Staffroom) -> None:
    # A scenario without sop_reviewers (or an extracted practice): someone must still approve.
    await propose(staff, "rev-3")
    assert await staff.sops.store.reviewers("tech-article", 2) == []
    with pytest.raises(InputError, match="nobody has approved") as err:
        await staff.sops.publish("tech-article", 2)
    assert "staffroom sop approve tech-article@2 --by NAME" in (err.value.fix or "")
    assert (await staff.sops.store.get("tech-article", 2)).status is Status.DRAFT
    await staff.sops.store.approve("tech-article", 2, "carol")
    assert (await staff.sops.publish("tech-article", 2)).status is Status.PUBLISHED


async def test_auto_publish_is_the_waiver(staff: Staffroom) -> None:
    proposed = await propose(
        staff, "rev-4", sop_auto_publish=True, sop_reviewers=["author", "team-lead"]
    )
    assert proposed["sop"] == "tech-article@2" and proposed["status"] == "published"
    assert await staff.sops.store.reviewers("tech-article", 2) == []


async def test_reviewers_are_recorded_on_drafts_only(tmp_path: Path) -> None:
    store = await SopStore.open(tmp_path)
    try:
        await store.add_version(replace(V1, status=Status.PUBLISHED))
        with pytest.raises(InputError, match="only a draft is reviewed"):
            await store.request_review("tech-article", 1, ["author"])
        await store.add_version(replace(V1, version=2, steps=V1.steps[::-1]))
        await store.request_review("tech-article", 2, ["author", "author", " "])
        assert await store.reviewers("tech-article", 2) == ["author"]  # once, blanks dropped
    finally:
        await store.close()


async def test_an_older_store_file_gains_the_review_tables_on_open(tmp_path: Path) -> None:
    store = await SopStore.open(tmp_path)
    await store.close()
    with sqlite3.connect(tmp_path / "sops.sqlite") as conn:  # as a file from before reviews
        conn.execute("DROP TABLE reviewers")
        conn.execute("DROP TABLE trials")
    # Read-only (no migration): the missing tables read as empty, not as an error.
    uri = (tmp_path / "sops.sqlite").resolve().as_uri()
    ro = SopStore(await aiosqlite.connect(f"{uri}?mode=ro", uri=True), tmp_path / "sops.sqlite")
    assert await ro.reviewers("x", 1) == [] and await ro.trials("x") == []
    await ro.close()
    store = await SopStore.open(tmp_path)  # writable: the tables are made
    await store.close()
    with sqlite3.connect(tmp_path / "sops.sqlite") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert {"reviewers", "trials"} <= tables
