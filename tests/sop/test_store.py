"""The SOP store on a real sqlite file: immutable numbered versions, review, run metrics."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import replace
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest

from framework.errors import InputError, SopCardError, UnknownNameError
from framework.sop.model import ChangeLogEntry, Correction, Outcome, SopVersion, Status, Step
from framework.sop.store import SopStore

STEPS = (Step(("pm",), "立题与提纲", tools=("write_file",)), Step(("engineer",), "技术评估"))


def version(n: int, *, steps: tuple[Step, ...] = STEPS, **kw: object) -> SopVersion:
    fields: dict[str, object] = {"goal": "写文章", "scope": "scenario:tech-article"} | kw
    return SopVersion("tech-article", n, steps=steps, **fields)  # type: ignore[arg-type]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SopStore]:
    opened = await SopStore.open(tmp_path / "data")
    yield opened
    await opened.close()


async def test_open_creates_sops_sqlite_in_wal_mode(tmp_path: Path) -> None:
    store = await SopStore.open(tmp_path / "data")
    await store.close()
    path = tmp_path / "data" / "sops.sqlite"
    assert store.path == path and path.is_file()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_versions_are_numbered_and_immutable(store: SopStore) -> None:
    assert await store.next_version("tech-article") == 1
    first = await store.add_version(version(1, change_log=(ChangeLogEntry(1, "初版", "admin"),)))
    assert first.created_at and first.status is Status.DRAFT
    assert first.change_log == (ChangeLogEntry(1, "初版", "admin"),)
    assert await store.next_version("tech-article") == 2

    # The same version again is a no-op; a different one under the same number is refused.
    assert await store.add_version(version(1)) == first
    with pytest.raises(SopCardError, match="tech-article@1 already exists") as err:
        await store.add_version(version(1, goal="别的目标"))
    assert "tech-article@2" in (err.value.fix or "")
    with pytest.raises(SopCardError, match="tech-article@3 skips a number"):
        await store.add_version(version(3))

    second = await store.add_version(version(2, steps=(*STEPS, Step(("designer",), "配图"))))
    assert [v.version for v in await store.versions("tech-article")] == [1, 2]
    assert await store.get("tech-article") == second
    assert await store.get("tech-article", 1) == first  # old sessions replay this one
    assert await store.sop_ids() == ["tech-article"]
    assert await store.for_scope("scenario:tech-article") == ["tech-article"]
    assert await store.for_scope("global") == []


async def test_versions_survive_reopening(tmp_path: Path) -> None:
    store = await SopStore.open(tmp_path)
    added = await store.add_version(version(1, body="notes", status=Status.PUBLISHED))
    await store.close()
    store = await SopStore.open(tmp_path / "sops.sqlite")
    assert await store.get("tech-article", 1) == added
    await store.close()


async def test_unknown_ids_and_versions_name_what_exists(store: SopStore) -> None:
    await store.add_version(version(1))
    with pytest.raises(UnknownNameError, match="unknown SOP 'nope'") as err:
        await store.get("nope")
    assert "tech-article" in (err.value.fix or "")
    with pytest.raises(UnknownNameError, match="no version 7") as err:
        await store.get("tech-article", 7)
    assert err.value.fix == "versions of 'tech-article': 1"
    with pytest.raises(UnknownNameError):
        await store.record_outcome(Outcome("tech-article@2", "room:x", success=True))
    with pytest.raises(InputError, match="names no version"):
        await store.record_reference("tech-article", "room:x", "alice")


async def test_publish_needs_every_required_approval(store: SopStore) -> None:
    await store.add_version(version(1))
    with pytest.raises(InputError, match="needs approval from: alice, manager"):
        await store.publish("tech-article", 1, required_reviewers=["alice", "manager"])
    approved = await store.approve("tech-article", 1, "alice", "顺序合理")
    assert [(a.reviewer, a.note) for a in approved.approvals] == [("alice", "顺序合理")]
    with pytest.raises(InputError, match=r"(?m)needs approval from: manager$"):
        await store.publish("tech-article", 1, required_reviewers=["alice", "manager"])
    assert (await store.get("tech-article", 1)).status is Status.DRAFT

    await store.approve("tech-article", 1, "manager")
    await store.approve("tech-article", 1, "manager")  # approving twice records it once
    published = await store.publish("tech-article", 1, required_reviewers=["alice", "manager"])
    assert published.status is Status.PUBLISHED
    assert [a.reviewer for a in published.approvals] == ["alice", "manager"]
    # The procedure itself did not change: the version is still equal in content.
    assert published.steps == STEPS and published.goal == "写文章"


async def test_deprecate_is_logged_and_final(store: SopStore) -> None:
    await store.add_version(version(1, status=Status.PUBLISHED))
    with pytest.raises(InputError, match="why"):
        await store.deprecate("tech-article", 1, " ")
    retired = await store.deprecate("tech-article", 1, "too many corrections", by="alice")
    assert retired.status is Status.DEPRECATED
    assert retired.change_log[-1] == ChangeLogEntry(1, "deprecated: too many corrections", "alice")
    again = await store.deprecate("tech-article", 1, "again")
    assert again.change_log == retired.change_log  # a repeat changes nothing
    with pytest.raises(InputError, match="deprecated"):
        await store.publish("tech-article", 1)
    with pytest.raises(InputError, match="deprecated"):
        await store.approve("tech-article", 1, "bob")


async def test_metrics_aggregate_runs_users_and_replacements(store: SopStore) -> None:
    await store.add_version(version(1, status=Status.PUBLISHED))
    await store.add_version(version(2, steps=STEPS[::-1]))
    ref = "tech-article@1"
    assert await store.metrics(ref) == type(await store.metrics(ref))()  # nothing yet

    for n, user in enumerate(["alice", "alice", "bob"]):
        await store.record_reference(ref, f"room:{n}", user, at=f"2026-01-0{n + 1}T00:00:00.000Z")
    fix = Correction("order", "评估应在提纲之前", step=2, by="alice")
    runs = [
        Outcome(ref, "room:0", True, user="alice", duration_s=10, at="2026-01-01T01:00:00.000Z"),
        Outcome(ref, "room:1", True, user="alice", duration_s=20, corrections=(fix, fix)),
        Outcome(ref, "room:2", False, user="bob", duration_s=60, at="2026-01-05T00:00:00.000Z"),
        Outcome(ref, "room:3", True, user="bob", duration_s=30, at="2026-01-04T00:00:00.000Z"),
    ]
    runs[1] = replace(runs[1], at="2026-01-02T01:00:00.000Z")
    for outcome in runs:
        await store.record_outcome(outcome)
    await store.record_outcome(runs[0])  # the same outcome replayed is kept once
    await store.record_replacement(ref, "tech-article@2")
    await store.record_replacement(ref, "tech-article@2")

    metrics = await store.metrics(ref)
    assert (metrics.references, metrics.runs, metrics.successes) == (3, 4, 3)
    assert metrics.corrections == 2
    assert metrics.mean_duration_s == pytest.approx(30.0)
    assert metrics.replaced == 1
    assert metrics.hit_rate_by_user == {"alice": 0.5, "bob": 0.5}
    assert metrics.last_used == "2026-01-05T00:00:00.000Z"
    assert (await store.metrics("tech-article@2")).runs == 0

    stored = await store.outcomes(ref)
    assert [o.session for o in stored] == ["room:0", "room:1", "room:3", "room:2"]  # by time
    assert stored[1] == runs[1]  # corrections round-trip with their step and author


async def test_tasks_sharing_one_store_do_not_collide(store: SopStore) -> None:
    await store.add_version(version(1))
    outcomes = [Outcome("tech-article@1", f"room:{n}", n % 2 == 0, user="u") for n in range(40)]
    await asyncio.gather(*(store.record_outcome(o) for o in outcomes))
    assert (await store.metrics("tech-article@1")).runs == 40


WORKERS, PER_WORKER = 4, 25


def record_outcomes(folder: str, worker: int, go: Event) -> None:
    async def run() -> None:
        store = await SopStore.open(folder)
        go.wait()
        for n in range(PER_WORKER):
            outcome = Outcome("tech-article@1", f"room:{worker}-{n}", True, user=f"u{worker}")
            await store.record_outcome(outcome)
            await store.record_reference("tech-article@1", f"room:{worker}-{n}", f"u{worker}")
        await store.close()

    asyncio.run(run())


async def test_processes_recording_at_once_lose_nothing(tmp_path: Path) -> None:
    store = await SopStore.open(tmp_path)
    await store.add_version(version(1, status=Status.PUBLISHED))
    ctx = multiprocessing.get_context("spawn")
    go = ctx.Event()
    procs = [
        ctx.Process(target=record_outcomes, args=(str(tmp_path), w, go)) for w in range(WORKERS)
    ]
    for proc in procs:
        proc.start()
    go.set()
    for proc in procs:
        await asyncio.to_thread(proc.join, 120)
        assert proc.exitcode == 0

    metrics = await store.metrics("tech-article@1")
    assert metrics.runs == metrics.references == WORKERS * PER_WORKER
    assert metrics.hit_rate_by_user == {f"u{w}": 1.0 for w in range(WORKERS)}
    assert len({o.session for o in await store.outcomes("tech-article@1")}) == WORKERS * PER_WORKER
    await store.close()
