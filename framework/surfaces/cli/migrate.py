"""``staffroom migrate --to postgresql://…``: move a data folder's stores into a database.

A folder that outgrew one process (several ``serve`` replicas) keeps its checkpoints, SOPs
and the server's ingest ledger in PostgreSQL; its session logs, workspaces and memory files
stay files in the folder, which the replicas share. This command copies the three SQLite
stores into the database (``migrate_stores.py``), checks that every row arrived, and only
then records the database in the folder's ``stores.json``: from then on every command on the
folder uses the database (and refuses to start without ``--database``), and the SQLite files
are no longer read. They are left where they are, to archive.

Refused before anything is copied, each with one ``error:`` line and its fix (exit 2): a URL
that is not PostgreSQL's, a folder that is not there or holds no store, a folder already
switched to another database, a database where a room lease is live (a replica is serving:
it would write while the copy runs), and a database holding another SOP history. A check that
finds a difference exits 1 and switches nothing. Run again, it copies only what is missing;
on a folder already switched to this database it copies nothing (the database has moved on
since: the old files would bring back what was deleted or answered there).

Imported when the CLI starts (``staffroom --help``): only typer and the option types here;
the database, the stores and LangGraph load when the command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from framework.errors import InputError
from framework.phrases import Phrase
from framework.surfaces.cli.console import LabelConsole, labels_language
from framework.surfaces.cli.options import DataDir, Project, label_language, settings_for

if TYPE_CHECKING:  # loaded when the command runs
    from rich.console import Console

    from framework.data_folder import DataFolder
    from framework.database.pool import Database
    from framework.settings import Settings
    from framework.surfaces.cli.migrate_stores import Copied

__all__ = ["migrate", "migrate_folder"]

console = LabelConsole(soft_wrap=True)

COPYING = Phrase(
    en="Copying the stores of {folder} into {database}",
    zh="正在把 {folder} 的存储复制到 {database}",
)
HEAD = {
    "store": Phrase(en="store", zh="存储"),
    "table": Phrase(en="table", zh="表"),
    "source": Phrase(en="in the folder", zh="数据目录中"),
    "target": Phrase(en="in the database", zh="数据库中"),
    "check": Phrase(en="check", zh="校验"),
}
SAME = Phrase(en="same", zh="一致")
DIFFERS = Phrase(en="differs: {n} rows missing or changed", zh="不一致：{n} 行缺失或不同")
PASSED = Phrase(
    en="Check passed: every row is in the database. The folder {folder} now uses {database}.",
    zh="校验通过：所有行都已在数据库中。数据目录 {folder} 今后使用 {database}。",
)
FAILED = Phrase(
    en="Check failed: the database does not hold everything the folder does. The folder "
    "was not switched; its SQLite files are still the ones in use. Run the command again; "
    "if it fails again, report the lines above.",
    zh="校验未通过：数据库中缺少数据目录中的内容。数据目录没有切换，仍在使用 SQLite 文件。"
    "请再运行一次本命令；若仍失败，请报告以上各行。",
)
UNUSED = Phrase(
    en="These files are no longer used and can be archived (keep them until you trust the "
    "database):",
    zh="以下文件已不再使用，可以归档（在确认数据库可靠之前请保留）：",
)
NEXT = Phrase(
    en="Give every command on this folder --database (or set $STAFFROOM_DATABASE_URL).",
    zh="此后对该数据目录的每条命令都需加 --database（或设置 $STAFFROOM_DATABASE_URL）。",
)
ALREADY = Phrase(
    en="The folder {folder} already uses {database}: nothing was copied (the database has "
    "moved on since the migration; its SQLite files are no longer used).",
    zh="数据目录 {folder} 已在使用 {database}：未复制任何内容（迁移后数据库已有新变化；"
    "其 SQLite 文件已不再使用）。",
)


def migrate(
    to: Annotated[
        str,
        typer.Option("--to", help="PostgreSQL URL to move the stores into (postgresql://…)."),
    ],
    data_dir: DataDir = None,
    project: Project = None,
) -> None:
    """Copy a data folder's stores (checkpoints, SOPs, the server's ledger, the schedules'
    fires) into a PostgreSQL database, check that nothing was lost, and switch the folder to
    it (exit 1 if the check fails; stop every server on the folder first)."""
    import asyncio

    from framework.database.url import check_database_url

    url = check_database_url(to, where="--to")
    settings = settings_for(data_dir, project)
    console.language = label_language(settings)
    raise typer.Exit(asyncio.run(migrate_folder(settings, url, console)))


def _check_folder(folder: DataFolder, shown: str) -> bool:
    """Refuse a folder that cannot be migrated; True when it already uses ``shown``."""
    from framework.data_folder import CHECKPOINTS, SOPS

    if not folder.root.is_dir():
        raise InputError(
            f"there is no data folder at {folder.root}",
            field="--data-dir",
            fix="give --data-dir the folder the rooms ran in (default: $STAFFROOM_HOME or "
            "./.staffroom)",
        )
    recorded = folder.database()
    if recorded == shown:
        return True
    if recorded is not None:
        raise InputError(
            f"the data folder {folder.root} already keeps its stores in the database "
            f"{recorded}, not {shown}",
            field="--to",
            fix="give its commands --database with that database's URL; to move the folder to "
            "another database, copy the database itself (pg_dump, then pg_restore)",
        )
    if not (folder.store(CHECKPOINTS).exists() or folder.store(SOPS).exists()):
        raise InputError(
            f"the data folder {folder.root} holds no store to migrate (no {CHECKPOINTS}, "
            f"no {SOPS})",
            field="--data-dir",
            fix="give --data-dir the folder the rooms ran in",
        )
    folder.check_stores()  # a lost store is not copied as if it were empty
    return False


async def _refuse_live_leases(db: Database, seconds: float, shown: str) -> None:
    from framework.database.leases import LEASE_MIGRATIONS, Leases
    from framework.database.migrations import apply_migrations

    await apply_migrations(db, LEASE_MIGRATIONS)
    live = await Leases(db, seconds=seconds).holders()
    if live:
        held = ", ".join(f"{lease.session} (by {lease.owner})" for lease in live[:5])
        more = f" and {len(live) - 5} more" if len(live) > 5 else ""
        raise InputError(
            f"the database {shown} is in use: live leases on {held}{more}; a migration "
            "copies while nothing writes, so nothing was copied",
            field="--to",
            fix="stop every staffroom serve (and run) using this database first, then run "
            "the migration again (a stopped replica's leases end within "
            f"{seconds:g} s)",
        )


async def migrate_folder(settings: Settings, url: str, out: Console) -> int:
    """Migrate ``settings.data_dir``'s stores into ``url``: 0 copied, checked and switched,
    1 when the check found a difference (nothing switched); user mistakes raise
    :class:`InputError` before anything is copied."""
    from framework.data_folder import CHECKPOINTS, INGEST, SOPS, DataFolder
    from framework.database.pool import Database
    from framework.database.url import redact
    from framework.stores import require_writable
    from framework.surfaces.cli import migrate_stores as stores

    folder = DataFolder(settings.data_dir)
    shown = redact(url, user=False)
    lang = labels_language(out)
    if _check_folder(folder, shown):
        out.print(ALREADY(lang, folder=folder.root, database=shown), highlight=False)
        return 0
    require_writable(folder.root, "migrate")
    db = await Database.open(url, max_size=2)
    try:
        await _refuse_live_leases(db, settings.lease_seconds, shown)
        sops = folder.store(SOPS)
        if sops.exists():
            from framework.sop.store import SopStore

            await SopStore.open_database(db)
            if conflicts := await stores.sop_history_conflicts(sops, db):
                raise stores.refuse_history(conflicts, shown)
        out.print(COPYING(lang, folder=folder.root, database=shown), highlight=False)
        copied: list[Copied] = []
        if folder.store(CHECKPOINTS).exists():
            copied += await stores.copy_checkpoint_store(folder.store(CHECKPOINTS), db)
        if sops.exists():
            copied += await stores.copy_sop_store(sops, db)
        if folder.store(INGEST).exists():
            copied += await stores.copy_ingest_ledger(folder.store(INGEST), db)
        if folder.schedules.exists():
            copied += await stores.copy_schedule_store(folder.schedules, db)
    finally:
        await db.close()
    _show(copied, out)
    if not all(c.ok for c in copied):
        out.print(f"[red]{FAILED(lang)}[/]", highlight=False)
        return 1
    folder.record_database(shown)
    out.print(f"[green]{PASSED(lang, folder=folder.root, database=shown)}[/]", highlight=False)
    out.print(NEXT(lang), highlight=False)
    out.print(UNUSED(lang), highlight=False)
    for path in stores.sqlite_files(folder):
        out.print(f"  {path}", highlight=False)
    return 0


def _show(copied: list[Copied], out: Console) -> None:
    from rich.table import Table

    lang = labels_language(out)
    table = Table(*(h(lang) for h in HEAD.values()), box=None, pad_edge=False)
    for c in copied:
        verdict = SAME(lang) if c.ok else DIFFERS(lang, n=max(c.missing, abs(c.source - c.target)))
        table.add_row(c.store, c.table, str(c.source), str(c.target), verdict)
    out.print(table)
    for c in copied:
        for note in c.notes:
            out.print(f"  {note}", highlight=False)
