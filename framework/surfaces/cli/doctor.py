"""``staffroom doctor``: what is wrong with a data folder, and ``--repair`` for what can be;
the checkpoint store's size and the rooms' leases, and ``--prune`` to shrink the store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.filesize import decimal
from rich.markup import escape
from rich.table import Table

from framework.doctor import Diagnosis, diagnose, repair
from framework.doctor.upkeep import Footprint, Pruned, measure, prune_store
from framework.phrases import Language, Phrase
from framework.settings import Settings
from framework.stores import Stores
from framework.surfaces.cli.console import labels_language
from framework.surfaces.cli.event_labels import COUNT_SEPARATOR

if TYPE_CHECKING:
    from framework.database.pool import Database

CHECKED = Phrase(
    en="checked {folder}: {counts}",
    zh="已检查 {folder}：{counts}",
)
NOTHING = Phrase(
    en="nothing",
    zh="无",
)
NO_PROBLEMS = Phrase(
    en="no problems found",
    zh="没有发现问题",
)
PROBLEM = Phrase(
    en="problem:",
    zh="问题：",
)
FIX = Phrase(
    en="fix: {fix}",
    zh="修复：{fix}",
)
REPAIRING = Phrase(
    en="repairing",
    zh="正在修复",
)
WHAT = {
    "stores": Phrase(en="{n} stores", zh="{n} 个存储"),
    "logs": Phrase(en="{n} logs", zh="{n} 个日志"),
    "rooms": Phrase(en="{n} rooms", zh="{n} 个房间"),
    "memory files": Phrase(en="{n} memory files", zh="{n} 个记忆文件"),
}
"""What the checks count (keys of :attr:`Diagnosis.checked`), labelled."""
SIZE = Phrase(
    en="checkpoints in {where}: {n} checkpoint(s), {size}",
    zh="{where} 中的检查点：{n} 个，{size}",
)
SIZE_COLUMNS = Phrase(
    en="table|rows|size",
    zh="表|行数|大小",
)
"""Column headings of the store's tables, ``|``-separated."""
LEASE_COLUMNS = Phrase(
    en="room|replica|epoch|expires in",
    zh="房间|副本|纪元|剩余",
)
"""Column headings of the live leases, ``|``-separated."""
LEASES = Phrase(
    en="rooms held by a replica now: {n}",
    zh="当前由副本持有的房间：{n}",
)
SECONDS = Phrase(
    en="{n} s",
    zh="{n} 秒",
)
PRUNING = Phrase(
    en="pruning checkpoints (each room keeps its latest one)",
    zh="正在清理检查点（每个房间保留最新的一个）",
)
PRUNED_ROOM = Phrase(
    en="{room}: {n} checkpoint(s) removed",
    zh="{room}：删除了 {n} 个检查点",
)
SKIPPED_ROOM = Phrase(
    en="{room}: skipped: {why}",
    zh="{room}：已跳过：{why}",
)
PRUNED = Phrase(
    en="removed {checkpoints} checkpoint(s) and {writes} pending write(s); "
    "size {before} -> {after}",
    zh="删除了 {checkpoints} 个检查点和 {writes} 条待写记录；大小 {before} -> {after}",
)
NOT_RECLAIMED = Phrase(
    en="the freed space was not given back ({why}); it is reused by new checkpoints, or run "
    "doctor --prune again when no room is running",
    zh="释放的空间未归还（{why}）；新的检查点会复用它，或在没有房间运行时再次运行 doctor --prune",
)
SCHEDULER_BEAT = Phrase(
    en="scheduler {host}:{pid}: last beat {last} ({age} ago){state}",
    zh="调度器 {host}:{pid}：最后心跳 {last}（{age} 前）{state}",
)
BEAT_STALLED = Phrase(
    en=": stalled (no beat for over {limit} s: hung, or stopped)",
    zh="：已停滞（超过 {limit} 秒没有心跳：卡住或已停止）",
)
BEAT_GONE = Phrase(
    en=": stopped (its process is gone)",
    zh="：已停止（进程已不存在）",
)
NO_SCHEDULER = Phrase(
    en="schedulers: none has run on this data folder",
    zh="调度器：此数据目录上还没有运行过调度器",
)
SCHEDULES_OK = Phrase(
    en="schedules.yaml: valid, {n} schedule(s)",
    zh="schedules.yaml：有效，{n} 个计划",
)
SCHEDULES_NONE = Phrase(
    en="schedules.yaml: none (no schedules)",
    zh="schedules.yaml：无（没有计划）",
)
SCHEDULES_BROKEN = Phrase(
    en="schedules.yaml does not load (a running scheduler keeps the last good version): {error}",
    zh="schedules.yaml 无法加载（运行中的调度器沿用上一个正确版本）：{error}",
)
AGE_UNITS = Phrase(
    en="{n} s|{n} min|{n} h|{n} d",
    zh="{n} 秒|{n} 分钟|{n} 小时|{n} 天",
)
"""An age in seconds, minutes, hours, days (``|``-separated)."""
LEDGER_UNREADABLE = Phrase(
    en="schedulers: the fire ledger cannot be read: {error}",
    zh="调度器：无法读取触发记录：{error}",
)
NOT_PRUNED = Phrase(
    en="not pruned: the checkpoint store has a problem (below); fix it first",
    zh="未清理：检查点存储有问题（见下）；请先修复",
)


async def doctor(settings: Settings, fix: bool, console: Console, prune: bool = False) -> int:
    """Print every finding with its fix, then the checkpoint store's size (and the rooms'
    leases, on a database); ``fix``: repair, ``prune``: keep each room's latest checkpoint
    only. Exit 0 when the folder is sound, 1 when not."""
    found = await diagnose(settings)
    if fix and not found.ok:
        _show(found, settings, console)
        console.print(f"\n[bold]{REPAIRING(labels_language(console))}[/]")
        for line in await repair(settings, found):
            console.print(f"  {escape(line)}", highlight=False)
        found = await diagnose(settings)
        console.print()
    # The store's size (and the prune) before the verdict: the verdict is the last word.
    writes = prune and settings.database is None  # on a database the folder is not written
    async with await Stores.open(settings=settings, writes=writes, command="doctor --prune") as s:
        if not prune:
            _show_size(await measure(s), console)
        elif _store_broken(found, s):
            _show_size(await measure(s), console)
            console.print(f"[yellow]{NOT_PRUNED(labels_language(console))}[/]")
        else:
            _show_pruned(await prune_store(s), console)
        db = await s.database() if settings.database is not None else None
        await _show_schedules(settings, db, console)
    console.print()
    _show(found, settings, console)
    return 0 if found.ok else 1


async def _show_schedules(settings: Settings, db: Database | None, console: Console) -> None:
    """Whether schedules.yaml loads, and each scheduler's heartbeat (stalled ones stand out).
    Shown, not counted in the verdict: a stopped server is not a damaged folder."""
    from datetime import UTC, datetime

    from framework.errors import InputError, StorageError
    from framework.schedules.health import STALLED_AFTER, beats, read_heartbeats
    from framework.specs.schedules_file import SCHEDULES_FILE, load_schedules

    lang = labels_language(console)
    console.print()
    try:
        count = len(load_schedules(settings.project_dir).schedules)
        exists = (settings.project_dir / SCHEDULES_FILE).is_file()
        line = SCHEDULES_OK(lang, n=count) if exists else SCHEDULES_NONE(lang)
        console.print(escape(line), highlight=False)
    except InputError as exc:
        console.print(f"[red]{escape(SCHEDULES_BROKEN(lang, error=str(exc)))}[/]", highlight=False)
    try:
        found = await read_heartbeats(settings.data_dir, db)
    except StorageError as exc:
        console.print(f"[red]{escape(LEDGER_UNREADABLE(lang, error=str(exc)))}[/]")
        return
    if not found:
        console.print(escape(NO_SCHEDULER(lang)), highlight=False)
        return
    limit = int(STALLED_AFTER.total_seconds())
    for beat in beats(found, datetime.now(UTC)):
        state = (
            BEAT_GONE(lang)
            if beat.gone
            else BEAT_STALLED(lang, limit=limit)
            if beat.stalled
            else ""
        )
        last = beat.last.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
        age = _age(beat.age, lang)
        line = SCHEDULER_BEAT(lang, host=beat.host, pid=beat.pid, last=last, age=age, state=state)
        console.print(
            f"[yellow]{escape(line)}[/]" if beat.stalled else escape(line), highlight=False
        )


def _age(seconds: float, language: Language) -> str:
    """``42 s``, ``7 min``, ``3 h``, ``2 d``: a heartbeat's age at a glance."""
    steps = ((1, 120), (60, 120 * 60), (3600, 48 * 3600), (86400, float("inf")))
    i, size = next((i, size) for i, (size, below) in enumerate(steps) if seconds < below)
    return AGE_UNITS(language, n=int(seconds // size)).split("|")[i]


def _store_broken(found: Diagnosis, stores: Stores) -> bool:
    path = str(stores.folder.checkpoints)
    return stores.settings.database is None and any(f.where == path for f in found.findings)


def _table(columns: Phrase, language: Language, shown: int | None = None) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False)
    for i, heading in enumerate(columns(language).split("|")[:shown]):
        table.add_column(heading, justify="left" if i == 0 else "right")
    return table


def _show_size(size: Footprint, console: Console) -> None:
    lang = labels_language(console)
    line = SIZE(lang, where=size.where, n=size.checkpoints, size=decimal(size.total_bytes))
    console.print(escape(line), highlight=False)
    if size.tables:
        sized = all(t.bytes is not None for t in size.tables)  # SQLite: the file's size only
        table = _table(SIZE_COLUMNS, lang, None if sized else 2)
        for t in size.tables:
            table.add_row(t.name, f"{t.rows:,}", *([decimal(t.bytes or 0)] if sized else []))
        console.print(table)
    if size.leases is None:
        return
    console.print(escape(LEASES(lang, n=len(size.leases))), highlight=False)
    if size.leases:
        table = _table(LEASE_COLUMNS, lang)
        for lease in size.leases:
            left = SECONDS(lang, n=f"{lease.expires_in:.0f}")
            table.add_row(escape(lease.session), escape(lease.owner), str(lease.epoch), left)
        console.print(table)


def _show_pruned(pruned: Pruned, console: Console) -> None:
    lang = labels_language(console)
    _show_size(pruned.before, console)
    console.print(f"\n[bold]{PRUNING(lang)}[/]")
    report = pruned.report
    for room, n in report.removed.items():
        console.print(f"  {escape(PRUNED_ROOM(lang, room=room, n=n))}", highlight=False)
    for room, why in report.skipped.items():
        line = SKIPPED_ROOM(lang, room=room, why=why)
        console.print(f"  [yellow]{escape(line)}[/]", highlight=False)
    total = PRUNED(
        lang,
        checkpoints=report.checkpoints_removed,
        writes=report.writes_removed,
        before=decimal(pruned.before.total_bytes),
        after=decimal(pruned.after.total_bytes),
    )
    console.print(escape(total), highlight=False)
    if pruned.not_reclaimed is not None:
        line = NOT_RECLAIMED(lang, why=pruned.not_reclaimed)
        console.print(f"[yellow]{escape(line)}[/]", highlight=False)
    console.print()
    _show_size(pruned.after, console)


def _counted(what: str, n: int, language: Language) -> str:
    label = WHAT.get(what)
    return label(language, n=n) if label is not None else f"{n} {what}"


def _show(found: Diagnosis, settings: Settings, console: Console) -> None:
    lang = labels_language(console)
    counts = COUNT_SEPARATOR(lang).join(
        _counted(what, n, lang) for what, n in found.checked.items()
    )
    checked = CHECKED(lang, folder=settings.data_dir, counts=counts or NOTHING(lang))
    console.print(escape(checked), highlight=False)
    if found.ok:
        console.print(f"[green]{NO_PROBLEMS(lang)}[/]")
        return
    for f in found.findings:
        action = f" [dim](--repair: {f.repair.replace('_', ' ')})[/]" if f.repair else ""
        console.print(
            f"[bold red]{PROBLEM(lang)}[/] {escape(f.where)}: {escape(f.problem)}", highlight=False
        )
        console.print(f"  {escape(FIX(lang, fix=f.fix))}{action}", highlight=False)
