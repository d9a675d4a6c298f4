"""``staffroom consolidate`` and ``staffroom memory``: the memory layers from the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from framework.settings import Settings
from framework.staffroom import Staffroom


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
    async with await Staffroom.admin(settings=settings) as admin:
        memory = admin.memory.memory(admin.employee(employee), user)
        doc = memory.read()
        if not memory.path.exists():
            console.print(f"no memory yet: {memory.path}")
            return 0
        size = f"{len(memory.render(doc))}/{memory.cap} characters"
        console.print(f"[bold]{memory.path}[/] ({size})")
        console.print(memory.render(doc), markup=False, highlight=False)
        for warning in doc.warnings:
            console.print(f"[yellow]warning: {escape(warning)}[/]")
        if doc.write_refusal is not None:  # shown above as read; say why it stays unwritten
            refusal = escape(doc.write_refusal.render())
            console.print(f"[bold yellow]writes refused:[/] {refusal}", highlight=False)
        records, superseded = memory.facts.load()
        shared = sorted(admin.memory.shared_sections(employee, user))
    for entries in doc.sections.values():
        for entry in entries:
            record = records.get(entry)
            if record is None:
                said = "no record (written by hand, or before records were kept)"
            else:
                said = f"from {record.get('source') or 'unknown'}, added {record.get('added')}"
                said += f", last confirmed {record.get('confirmed')}"
            console.print(f"  · {escape(entry)}: [dim]{escape(said)}[/]", highlight=False)
    for old in superseded:
        line = f"  superseded {old.date} in {old.section}: {old.old} (by: {old.new})"
        console.print(escape(line), style="dim", highlight=False)
    console.print(
        f"shared with rooms where others are present: {', '.join(shared) or 'nothing'} "
        f"(change with --share)"
    )
    return 0


async def set_shared(
    settings: Settings, employee: str, user: str, spec: str, console: Console
) -> int:
    """``memory --share``: which sections rooms with other people may see (a read-only data
    folder is refused before anything is written)."""
    wanted = [] if spec.strip().lower() == "none" else [s.strip() for s in spec.split(",")]
    command = "memory --share"
    async with await Staffroom.admin(settings=settings, writes=True, command=command) as admin:
        chosen = admin.memory.share(admin.employee(employee), user, [s for s in wanted if s])
    console.print(
        f"{user}'s memory at {employee}: rooms with other people now see "
        f"{', '.join(sorted(chosen)) or 'nothing'}"
    )
    return 0
