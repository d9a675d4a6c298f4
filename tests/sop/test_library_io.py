"""SOP cards <-> the store: the shipped library imports, exports and re-imports unchanged."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from paths import ROOT

from framework.errors import SopCardError
from framework.sop.library_io import (
    card_to_version,
    export_library,
    import_library,
    version_to_card_text,
)
from framework.sop.model import Approval, ChangeLogEntry, SopVersion, Status, Step
from framework.sop.store import SopStore
from framework.specs.sop_card import load_sop_card

LIBRARY = ROOT / "sop_library"
SHIPPED = LIBRARY / "tech_article" / "v1.md"

TRICKY = SopVersion(
    sop_id="launch_note",
    version=1,
    goal="发布说明: 'yes' 与 #号 {都要} 保留",
    scope="global",
    steps=(
        Step(("pm",), '立题: 先问 "谁读"', tools=("write_file",), fallback="yes"),
        Step(("designer", "reviewer"), "配图, 合规", parallel=True, waits_for_input=True),
        Step(("1",), "null", fallback="第一行\n第二行"),
    ),
    status=Status.DEPRECATED,
    change_log=(
        ChangeLogEntry(1, "初版: 来自会话", by="extraction", source="room:launch-41"),
        ChangeLogEntry(1, "deprecated: 已被替代", by="alice"),
    ),
    approvals=(
        Approval("alice", "2026-01-01T00:00:00.000Z", "顺序合理: 可以"),
        Approval("manager", "2026-01-02T00:00:00.000Z"),
    ),
    body="# 说明\n\n---\n\n- 第一条\n\n## 背景\n\n正文。",
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SopStore]:
    opened = await SopStore.open(tmp_path / "data")
    yield opened
    await opened.close()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_shipped_library_imports_exports_and_reimports_as_a_no_op(
    store: SopStore, tmp_path: Path
) -> None:
    report = await import_library(store, LIBRARY)
    shipped = ["escalation@1", "tech-article@1"]  # the English sample and the Chinese one
    assert report.added == shipped and report.changed
    stored = await store.get("tech-article", 1)
    card = load_sop_card(SHIPPED)
    assert stored.status is Status.PUBLISHED
    assert stored.change_log == (ChangeLogEntry(1, card.change_log[0].why, by="admin"),)
    assert stored.steps[1].waits_for_input and stored.steps[0].tools == ("write_file",)
    assert stored.body == card.body

    again = await import_library(store, LIBRARY)
    assert (again.added, again.updated, again.skipped) == ([], [], shipped)

    out = tmp_path / "out"
    folders = {"escalation": "escalation", "tech-article": "tech_article"}  # id: shipped folder
    assert await export_library(store, out) == [out / sop / "v1.md" for sop in folders]
    # The exported cards are the shipped cards, byte for byte.
    for sop, folder in folders.items():
        exported = (out / sop / "v1.md").read_text(encoding="utf-8")
        assert exported == (LIBRARY / folder / "v1.md").read_text(encoding="utf-8")
    reimport = await import_library(store, out)
    assert not reimport.changed and reimport.skipped == shipped
    assert await store.get("tech-article", 1) == stored


async def test_export_into_the_library_updates_cards_in_place(
    store: SopStore, tmp_path: Path
) -> None:
    library = tmp_path / "sop_library"
    shutil.copytree(LIBRARY, library)
    await import_library(store, library)
    v1 = await store.get("tech-article")
    await store.add_version(replace(v1, version=2, body="v2", status=Status.DRAFT))
    paths = await export_library(store, library)
    # Same folder as the existing card (tech_article/), not a second one named by the id.
    ours = [library / "tech_article" / "v1.md", library / "tech_article" / "v2.md"]
    assert paths == [library / "escalation" / "v1.md", *ours]
    assert (library / "tech_article" / "v1.md").read_bytes() == SHIPPED.read_bytes()
    assert sorted(p.name for p in library.iterdir()) == ["escalation", "tech_article"]
    assert load_sop_card(paths[-1]).status == "draft"


async def test_a_version_round_trips_through_its_card(tmp_path: Path) -> None:
    text = version_to_card_text(TRICKY)
    assert "\n## Approvals\n\n- reviewer: alice\n" in text
    assert card_to_version(load_sop_card(write(tmp_path / "v1.md", text))) == TRICKY


async def test_export_then_import_into_a_fresh_store_keeps_everything(tmp_path: Path) -> None:
    first = await SopStore.open(tmp_path / "a")
    await first.add_version(TRICKY)
    written = await export_library(first, tmp_path / "cards")
    assert written == [tmp_path / "cards" / "launch_note" / "v1.md"]
    await first.close()

    second = await SopStore.open(tmp_path / "b")
    assert (await import_library(second, tmp_path / "cards")).added == ["launch_note@1"]
    assert replace(await second.get("launch_note", 1), created_at="") == TRICKY
    await export_library(second, tmp_path / "cards2")
    await second.close()
    name = Path("launch_note") / "v1.md"
    assert (tmp_path / "cards2" / name).read_text() == (tmp_path / "cards" / name).read_text()


async def test_a_card_moves_status_forward_and_adds_approvals(
    store: SopStore, tmp_path: Path
) -> None:
    draft = replace(TRICKY, status=Status.DRAFT, approvals=(), change_log=())
    path = write(tmp_path / "lib" / "launch_note" / "v1.md", version_to_card_text(draft))
    assert (await import_library(store, tmp_path / "lib")).added == ["launch_note@1"]

    reviewed = replace(draft, status=Status.PUBLISHED, approvals=TRICKY.approvals[:1])
    write(path, version_to_card_text(reviewed))
    assert (await import_library(store, tmp_path / "lib")).updated == ["launch_note@1"]
    stored = await store.get("launch_note", 1)
    assert stored.status is Status.PUBLISHED and stored.approvals == TRICKY.approvals[:1]

    # The store is further along (deprecated by its metrics): the card never moves it back.
    await store.deprecate("launch_note", 1, "sank")
    assert (await import_library(store, tmp_path / "lib")).skipped == ["launch_note@1"]
    assert (await store.get("launch_note", 1)).status is Status.DEPRECATED


async def test_a_changed_card_under_an_existing_version_names_the_file(
    store: SopStore, tmp_path: Path
) -> None:
    library = tmp_path / "lib"
    shutil.copytree(LIBRARY, library)
    await import_library(store, library)
    card = library / "tech_article" / "v1.md"
    card.write_text(card.read_text(encoding="utf-8").replace("立题与提纲", "提纲"), "utf-8")
    with pytest.raises(SopCardError, match="already stored with different content") as err:
        await import_library(store, library)
    assert err.value.file == str(card) and err.value.line == 3
    assert "version: 2" in (err.value.fix or "")


async def test_a_gap_in_version_numbers_names_the_file(store: SopStore, tmp_path: Path) -> None:
    library = tmp_path / "lib"
    shutil.copytree(LIBRARY, library)
    v3 = library / "tech_article" / "v3.md"
    v3.write_text(SHIPPED.read_text(encoding="utf-8").replace("version: 1\n", "version: 3\n"))
    with pytest.raises(SopCardError, match="skips a number") as err:
        await import_library(store, library)
    assert err.value.file == str(v3)
    assert [v.version for v in await store.versions("tech-article")] == [1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter\n", "no YAML front matter"),
        (version_to_card_text(TRICKY) + "\nmore: [\n", "approvals section is not YAML"),
        (version_to_card_text(TRICKY).replace("reviewer: manager", "who: m"), "malformed"),
    ],
)
async def test_a_bad_card_names_the_file(
    store: SopStore, tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path / "lib" / "x" / "v1.md", text)
    with pytest.raises(SopCardError, match=message) as err:
        await import_library(store, tmp_path / "lib")
    assert err.value.file == str(path)
    assert await store.sop_ids() == []
