"""``staffroom consolidate`` and ``staffroom memory``: the memory layers from the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from framework.phrases import Phrase
from framework.settings import Settings
from framework.staffroom import Staffroom
from framework.stores import Stores
from framework.surfaces.cli.console import labels_language

NO_MEMORY = Phrase(
    en="no memory yet: {path}",
    zh="还没有记忆：{path}",
)
SIZE = Phrase(
    en="{used}/{cap} characters",
    zh="{used}/{cap} 个字符",
)
WARNING = Phrase(
    en="warning: {warning}",
    zh="警告：{warning}",
)
WRITES_REFUSED = Phrase(
    en="writes refused:",
    zh="拒绝写入：",
)
NO_RECORD = Phrase(
    en="no record (written by hand, or before records were kept)",
    zh="没有记录（手写的，或在开始记录之前写的）",
)
RECORD = Phrase(
    en="from {source}, added {added}, last confirmed {confirmed}",
    zh="来自 {source}，{added} 添加，{confirmed} 最近确认",
)
UNKNOWN = Phrase(
    en="unknown",
    zh="未知",
)
SUPERSEDED = Phrase(
    en="superseded {date} in {section}: {old} (by: {new})",
    zh="{date} 在 {section} 中被取代：{old}（取代为：{new}）",
)
SHARED = Phrase(
    en="shared with rooms where others are present: {sections} (change with --share)",
    zh="在有其他人的房间里共享：{sections}（用 --share 修改）",
)
NOTHING = Phrase(
    en="nothing",
    zh="无",
)
NOW_SHARED = Phrase(
    en="{user}'s memory at {employee}: rooms with other people now see {sections}",
    zh="{employee} 对 {user} 的记忆：有其他人的房间现在能看到 {sections}",
)


async def consolidate(settings: Settings, session: str, force: bool, console: Console) -> int:
    """Consolidate one session now and report what was folded where, and by whom.

    Exit status 1 when the model could not be called at all (the extractive summary was
    written instead, so nothing is lost, but the model setup needs fixing); a model answer
    that was only unusable is a warning (status 0).
    """
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.session(session, scenario_file=True)
        report = await room.consolidate(force=force)
        history = staff.memory.history(room.key).path
        if not report.batches:
            window = room.settings.memory_window
            console.print(
                f"nothing to consolidate in {room.key} (memory_window {window}; --force folds "
                "all but the newest half-window)"
            )
            return 0
        console.print(
            f"consolidated {report.messages} messages in {report.batches} batch(es): "
            f"{report.history_lines} line(s) -> {history}, {report.facts} fact(s) -> MEMORY.md"
        )
        console.print(f"summarised by: {escape(report.summarised_by)}")
        for refused in report.refused_facts:
            # Full, or refusing writes (not UTF-8, a folder): `staffroom memory` says which.
            console.print(
                f"[yellow]not stored (MEMORY.md is full or refuses writes): {escape(refused)}[/]"
            )
        # One line per distinct reason: a server that is down fails every batch alike.
        for reason in dict.fromkeys(report.fallbacks):
            count = report.fallbacks.count(reason)
            console.print(
                f"[yellow]⚠ fallback: {count} of {report.batches} batch(es) got the extractive "
                f"summary instead of the model's: {escape(reason)}[/]"
            )
        if report.call_failed:
            console.print(
                "[bold red]error:[/] the model could not be called; the extractive summary was "
                "written instead (nothing is lost). Fix the model setup and see the reason above."
            )
            return 1
        return 0


async def show_memory(settings: Settings, employee: str, user: str, console: Console) -> int:
    """Print one MEMORY.md and anything odd about it.

    A MEMORY.md that cannot be read (a folder, no permission) raises
    :class:`~framework.errors.InputError`: the CLI prints it with its fix and exits 2.
    """
    lang = labels_language(console)
    async with await Stores.open(settings=settings) as stores:
        memory = stores.memory.memory(stores.employee(employee), user)
        doc = memory.read()
        if not memory.path.exists():
            console.print(escape(NO_MEMORY(lang, path=memory.path)))
            return 0
        size = SIZE(lang, used=len(memory.render(doc)), cap=memory.cap)
        console.print(f"[bold]{escape(str(memory.path))}[/] ({size})")
        console.print(memory.render(doc), markup=False, highlight=False)
        for warning in doc.warnings:
            console.print(f"[yellow]{escape(WARNING(lang, warning=warning))}[/]")
        if doc.write_refusal is not None:  # shown above as read; say why it stays unwritten
            refusal = escape(doc.write_refusal.render())
            console.print(f"[bold yellow]{WRITES_REFUSED(lang)}[/] {refusal}", highlight=False)
        records, superseded = memory.facts.load()
        shared = sorted(stores.memory.shared_sections(employee, user))
    for entries in doc.sections.values():
        for entry in entries:
            record = records.get(entry)
            if record is None:
                said = NO_RECORD(lang)
            else:
                said = RECORD(
                    lang,
                    source=record.get("source") or UNKNOWN(lang),
                    added=record.get("added"),
                    confirmed=record.get("confirmed"),
                )
            console.print(f"  · {escape(entry)}: [dim]{escape(said)}[/]", highlight=False)
    for old in superseded:
        line = SUPERSEDED(lang, date=old.date, section=old.section, old=old.old, new=old.new)
        console.print(escape(f"  {line}"), style="dim", highlight=False)
    console.print(escape(SHARED(lang, sections=", ".join(shared) or NOTHING(lang))))
    return 0


async def set_shared(
    settings: Settings, employee: str, user: str, spec: str, console: Console
) -> int:
    """``memory --share``: which sections rooms with other people may see (a read-only data
    folder is refused before anything is written)."""
    wanted = [] if spec.strip().lower() == "none" else [s.strip() for s in spec.split(",")]
    command = "memory --share"
    async with await Stores.open(settings=settings, writes=True, command=command) as stores:
        chosen = stores.memory.share(stores.employee(employee), user, [s for s in wanted if s])
    lang = labels_language(console)
    sections = ", ".join(sorted(chosen)) or NOTHING(lang)
    console.print(escape(NOW_SHARED(lang, user=user, employee=employee, sections=sections)))
    return 0
