"""The SOP store behaves the same on both backends: a ``sops.sqlite`` file and PostgreSQL.

The behaviour tests of test_store.py and test_trials.py run here again, unchanged, on a
``store`` (and ``service``) fixture made once per backend; the tests below cover what only
the dialects could make differ (order, quoting, numbers read back, placeholders).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from test_store import (  # tests/sop is on sys.path: the same bodies, this module's fixtures
    STEPS,
    test_deprecate_is_logged_and_final,
    test_metrics_aggregate_runs_users_and_replacements,
    test_publish_needs_every_required_approval,
    test_tasks_sharing_one_store_do_not_collide,
    test_unknown_ids_and_versions_name_what_exists,
    test_versions_are_numbered_and_immutable,
    version,
)
from test_trials import (
    V1,
    test_a_trial_that_does_as_well_becomes_the_best,
    test_a_trial_that_does_worse_is_rolled_back,
    test_a_trial_version_retired_by_hand_ends_its_trial,
    test_a_version_published_over_the_best_runs_as_a_trial,
    test_publishing_again_during_a_trial_ends_it_unjudged,
    test_runs_before_the_trial_began_do_not_count,
)

from framework.database.pool import Database
from framework.sop.model import ChangeLogEntry, Correction, Outcome, Status
from framework.sop.pg_connection import to_postgres
from framework.sop.service import SopService
from framework.sop.store import SopStore

REUSED = (
    test_deprecate_is_logged_and_final,
    test_metrics_aggregate_runs_users_and_replacements,
    test_publish_needs_every_required_approval,
    test_tasks_sharing_one_store_do_not_collide,
    test_unknown_ids_and_versions_name_what_exists,
    test_versions_are_numbered_and_immutable,
    test_a_trial_that_does_as_well_becomes_the_best,
    test_a_trial_that_does_worse_is_rolled_back,
    test_a_trial_version_retired_by_hand_ends_its_trial,
    test_a_version_published_over_the_best_runs_as_a_trial,
    test_publishing_again_during_a_trial_ends_it_unjudged,
    test_runs_before_the_trial_began_do_not_count,
)


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SopStore]:
    if request.param == "sqlite":
        opened = await SopStore.open(tmp_path / "data")
        yield opened
        await opened.close()
        return
    db = await Database.open(request.getfixturevalue("pg_url"), max_size=4)
    try:
        opened = await SopStore.open_database(db)
        yield opened
        await opened.close()
    finally:
        await db.close()


@pytest.fixture
async def service(store: SopStore) -> SopService:
    await store.add_version(V1)
    return SopService(store)


async def test_order_is_kept_as_written(store: SopStore) -> None:
    # Byte order for ids, as SQLite sorts (a locale would put "tech_article" elsewhere).
    for sop_id in ("tech_article", "Tech", "tech-article"):
        await store.add_version(replace(version(1), sop_id=sop_id))
    assert await store.sop_ids() == ["Tech", "tech-article", "tech_article"]
    await store.add_version(version(2, steps=STEPS[::-1]))
    await store.request_review("tech-article", 2, ["zoe", "adam", "zoe", "mia"])
    assert await store.reviewers("tech-article", 2) == ["zoe", "adam", "mia"]  # as named
    for n, reviewer in enumerate(("mia", "zoe", "adam")):
        await store.approve("tech-article", 2, reviewer, at=f"2026-01-01T00:00:0{n}.000Z")
    published = await store.publish("tech-article", 2, by="bob")
    assert [a.reviewer for a in published.approvals] == ["mia", "zoe", "adam"]  # by time
    await store.deprecate("tech-article", 2, "50% worse", by="carol")  # a literal % in data
    log = (await store.get("tech-article", 2)).change_log
    assert log[-2:] == (
        ChangeLogEntry(2, "published", "bob"),
        ChangeLogEntry(2, "deprecated: 50% worse", "carol"),
    )
    assert published.status is Status.PUBLISHED


async def test_outcomes_read_back_as_written_and_amend(store: SopStore) -> None:
    await store.add_version(version(1, status=Status.PUBLISHED))
    fix = Correction("order", "评估应在提纲之前", step=2, by="alice")
    first = Outcome(
        "tech-article@1", "room:a", False, user="alice", score=0.7, duration_s=12.5,
        off_sop_turns=2, human_interventions=1, at="2026-01-01T00:00:00.000Z",
        corrections=(fix,), failures=("timeout",),
    )  # fmt: skip
    await store.record_outcome(first)
    assert await store.outcomes("tech-article@1") == [first]  # 0.7 stays 0.7 (no float4)
    amended = replace(first, success=True, score=0.9, corrections=())
    await store.record_outcome(amended, amend=True)
    assert await store.outcomes("tech-article@1") == [amended]
    metrics = await store.metrics("tech-article@1")
    assert (metrics.runs, metrics.successes, metrics.corrections) == (1, 1, 0)
    assert metrics.hit_rate_by_user == {"alice": 1.0}


async def test_add_products_is_the_one_change_a_version_accepts(store: SopStore) -> None:
    await store.add_version(version(1))
    declared = replace(STEPS[0], produces=("outline",))
    updated = await store.add_products(version(1, steps=(declared, *STEPS[1:])))
    assert updated.steps[0].produces == ("outline",)


def test_postgres_sql_is_the_stores_sql_with_prefixed_tables_and_placeholders() -> None:
    sql = 'SELECT * FROM "references" JOIN versions ON why LIKE ? WHERE sop_id = ?'
    assert to_postgres(sql) == (
        "SELECT * FROM staffroom_sop_references JOIN staffroom_sop_versions ON why LIKE %s "
        "WHERE sop_id = %s"
    )
    assert (
        to_postgres("SELECT 100 % 7 FROM outcomes") == "SELECT 100 %% 7 FROM staffroom_sop_outcomes"
    )
    assert to_postgres("SELECT version, entry_version FROM change_log") == (
        "SELECT version, entry_version FROM staffroom_sop_change_log"
    )
