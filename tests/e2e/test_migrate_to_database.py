"""`staffroom migrate --to`: a folder's SQLite stores move into PostgreSQL, nothing lost, and
its rooms go on there where they stood."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from cli_in_process import Cli, CliResult

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "scenarios" / "escalation.script.txt")

pytestmark = pytest.mark.sqlite_only  # it migrates a folder's SQLite files


def _room(cli: Cli, data: Path, room: str, *more: str) -> CliResult:
    ran = cli(
        "run", "escalation", "--room", room, "--message", f"Ticket {room}: 502", *more, data=data
    )
    assert ran.code == 0, ran.out + ran.err
    return ran


@pytest.fixture
def folder(cli: Cli, tmp_path: Path) -> Path:
    """A data folder on SQLite: room r0 ran to its end, room r1 waits for maria."""
    data = tmp_path / "data"
    _room(cli, data, "r0", "--script", SCRIPT)
    assert "waiting for maria" in _room(cli, data, "r1").out
    return data


def _made(data: Path) -> list[str]:
    with sqlite3.connect(data / "sops.sqlite") as conn:
        return [r[0] for r in conn.execute("SELECT created_at FROM versions ORDER BY sop_id")]


def _openings(cli: Cli, data: Path, session: str, *db: str) -> int:
    shown = cli("history", session, "--json", *db, data=data)
    assert shown.code == 0, shown.err
    events = [json.loads(line) for line in shown.out.splitlines() if line.startswith("{")]
    return sum(1 for e in events if (e.get("meta") or {}).get("opening"))


def test_migrate_copies_everything_and_rooms_go_on_on_the_database(
    cli: Cli, folder: Path, pg_url: str
) -> None:
    before = cli("sop", "list", data=folder)
    assert before.code == 0

    moved = cli("migrate", "--to", pg_url, data=folder)

    assert moved.code == 0, moved.out + moved.err
    assert "Check passed" in moved.out
    assert "differs" not in moved.out
    for table in ("checkpoints", "versions", "outcomes", "change_log"):
        assert table in moved.out
    assert "sops.sqlite" in moved.out and "can be archived" in moved.out
    record = json.loads((folder / "stores.json").read_text())
    assert record["database"].startswith("postgresql://") and "@" not in record["database"]
    assert (folder / "sops.sqlite").exists(), "the files are left where they are"

    # Without the database the folder is refused; with it, the same SOP runs and metrics.
    assert cli("sop", "list", data=folder).code == 2
    after = cli("sop", "list", env={"STAFFROOM_DATABASE_URL": pg_url}, data=folder)
    assert after.code == 0, after.err
    assert after.out == before.out

    assert _openings(cli, folder, "room:r1") == 1
    resumed = _room(cli, folder, "r1", "--database", pg_url, "--script", SCRIPT)
    assert "waiting for maria" not in resumed.out
    assert _openings(cli, folder, "room:r1") == 1, "continued where it stood, not restarted"
    on_db = {"STAFFROOM_DATABASE_URL": pg_url}
    second = cli("sop", "list", env=on_db, data=folder)
    assert "│ 2    │" in second.out, "r1's run is counted beside r0's"

    again = cli("migrate", "--to", pg_url, data=folder)
    assert again.code == 0, again.err
    assert "already uses" in again.out
    assert cli("sop", "list", env=on_db, data=folder).out == second.out


def test_a_bad_url_and_a_missing_folder_are_refused_with_a_fix(
    cli: Cli, tmp_path: Path, pg_url: str
) -> None:
    bad = cli("migrate", "--to", "sqlite:///x.db", data=tmp_path / "data")
    assert bad.code == 2
    assert "error:" in bad.err and "not a PostgreSQL URL" in bad.err and "postgresql://" in bad.err

    missing = cli("migrate", "--to", pg_url, data=tmp_path / "nope")
    assert missing.code == 2
    assert "no data folder" in missing.err and "--data-dir" in missing.err


def test_a_folder_switched_to_another_database_is_refused(
    cli: Cli, folder: Path, pg_url: str
) -> None:
    assert cli("migrate", "--to", pg_url, data=folder).code == 0
    other = pg_url.rsplit("/", 1)[0] + "/elsewhere"
    refused = cli("migrate", "--to", other, data=folder)
    assert refused.code == 2
    assert "already keeps its stores in the database" in refused.err
    assert "pg_dump" in refused.err


def test_a_database_with_live_leases_is_refused(cli: Cli, folder: Path, pg_url: str) -> None:
    import asyncio

    from framework.database.leases import LEASE_MIGRATIONS, Leases
    from framework.database.migrations import apply_migrations
    from framework.database.pool import Database

    async def hold() -> None:
        db = await Database.open(pg_url)
        try:
            await apply_migrations(db, LEASE_MIGRATIONS)
            assert await Leases(db, seconds=60).acquire("room:busy") is not None
        finally:
            await db.close()

    asyncio.run(hold())
    refused = cli("migrate", "--to", pg_url, data=folder)
    assert refused.code == 2
    assert "room:busy" in refused.err and "stop every staffroom serve" in refused.err
    assert "database" not in json.loads((folder / "stores.json").read_text())


def test_a_database_holding_another_sop_history_is_refused(
    cli: Cli, folder: Path, tmp_path: Path, pg_url: str
) -> None:
    other = tmp_path / "other"
    _room(cli, other, "x1", "--script", SCRIPT)
    assert cli("migrate", "--to", pg_url, data=other).code == 0
    # Each folder imported escalation@1 itself, at its own time: two histories.
    assert _made(folder) != _made(other)

    refused = cli("migrate", "--to", pg_url, data=folder)

    assert refused.code == 2, refused.out + refused.err
    assert "another SOP history" in refused.err and "empty database" in refused.err
    assert "database" not in json.loads((folder / "stores.json").read_text())


def test_the_servers_ingest_ledger_moves_with_its_order_and_states(
    cli: Cli, folder: Path, pg_url: str
) -> None:
    import asyncio

    from framework.database.pool import Database
    from framework.serving.ledger import IngestLedger

    async def accept() -> None:
        ledger = await IngestLedger.open(folder / "ingest.sqlite")
        try:
            for n in (1, 2, 3):
                await ledger.claim(
                    "room:r1", f"msg:m{n}", message_id=f"m{n}", author="a", text=f"{n}"
                )
            await ledger.update("room:r1", "m1", state="done", result={"ok": True})
            await ledger.record_sent("room:r1", "slack-1", "event-1")
        finally:
            await ledger.close()

    async def shared() -> tuple[list[tuple[str, str]], str | None, bool]:
        db = await Database.open(pg_url)
        try:
            ledger = await IngestLedger.open_database(db)
            pending = [(e.message_id, e.state) for e in await ledger.pending()]
            sent = await ledger.sent_event("room:r1", "slack-1")
            done = await ledger.get("room:r1", "msg:m1")
            # A message accepted on the database comes after the copied ones.
            assert (
                await ledger.claim("room:r1", "msg:m4", message_id="m4", author="a", text="4")
                is None
            )
            after = [e.message_id for e in await ledger.pending()]
            assert after == ["m2", "m3", "m4"]
            return pending, sent, done is not None and done.result == {"ok": True}
        finally:
            await db.close()

    asyncio.run(accept())
    moved = cli("migrate", "--to", pg_url, data=folder)
    assert moved.code == 0, moved.out + moved.err
    assert "ingest" in moved.out and "ingest.sqlite" in moved.out

    pending, sent, done = asyncio.run(shared())
    assert pending == [("m2", "queued"), ("m3", "queued")]
    assert sent == "event-1" and done


def test_a_migration_cut_off_after_the_sop_store_is_run_again(
    cli: Cli, folder: Path, pg_url: str
) -> None:
    import asyncio

    from framework.database.pool import Database
    from framework.surfaces.cli.migrate_stores import copy_sop_store

    async def cut_off() -> None:
        db = await Database.open(pg_url)
        try:
            await copy_sop_store(folder / "sops.sqlite", db)
        finally:
            await db.close()

    asyncio.run(cut_off())
    assert "database" not in json.loads((folder / "stores.json").read_text())

    moved = cli("migrate", "--to", pg_url, env={"STAFFROOM_LANGUAGE": "zh"}, data=folder)

    assert moved.code == 0, moved.out + moved.err
    assert "校验通过" in moved.out and "不一致" not in moved.out, "labelled in Chinese"


def test_the_schedules_fire_ledger_moves_so_nothing_fires_again(
    cli: Cli, folder: Path, pg_url: str
) -> None:
    import asyncio
    from datetime import UTC, datetime, timedelta

    from framework.database.pool import Database
    from framework.schedules.fire_store import FireStore, open_fire_store

    t0 = datetime(2026, 3, 2, 8, 30, 0, 250, tzinfo=UTC)

    async def fired() -> FireStore:
        store = await open_fire_store(folder, None)
        await store.claim("s@1", "s", t0, "due", "a", now=t0, lease_s=60)
        await store.record("s@1", "a", "done", now=t0 + timedelta(seconds=9), session="room:x")
        await store.claim("s@2", "s", t0 + timedelta(days=1), "catchup", "a", now=t0, lease_s=60)
        await store.record_missed("t@1", "t", t0, "missed", now=t0, detail="down 2h")
        await store.advance("s", t0 + timedelta(days=1))
        await store.set_paused("t", True, by="alice", now=t0)
        await store.beat("a", now=t0, host="h", pid=1)
        return store

    async def seen(store: FireStore) -> tuple[object, ...]:
        return (
            await store.history(),
            await store.cursor("s"),
            await store.paused(),
            await store.claim("s@1", "s", t0, "due", "b", now=t0 + timedelta(days=9), lease_s=9),
        )

    async def before() -> tuple[object, ...]:
        store = await fired()
        try:
            return await seen(store)
        finally:
            await store.close()

    async def after() -> tuple[object, ...]:
        db = await Database.open(pg_url)
        try:
            store = await open_fire_store(folder, db)
            return *(await seen(store)), await store.heartbeats()
        finally:
            await db.close()

    in_file = asyncio.run(before())
    moved = cli("migrate", "--to", pg_url, data=folder)
    assert moved.code == 0, moved.out + moved.err
    assert "schedule_fires" in moved.out and "schedules.sqlite" in moved.out
    *on_database, beats = asyncio.run(after())
    assert tuple(on_database) == in_file, "the same fires, cursor and pauses"
    assert in_file[3] is None, "the fire that ran is not claimed again"
    assert beats == [], "the stopped schedulers' heartbeats stay behind"
