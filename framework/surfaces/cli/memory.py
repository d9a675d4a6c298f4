"""``staffroom consolidate`` and ``staffroom memory``: the memory layers from the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from framework.memory.store import MemoryStore
from framework.settings import Settings
from framework.staffroom import Staffroom


async def consolidate(settings: Settings, session: str, force: bool, console: Console) -> None:
    """Consolidate one session now and report what was folded where."""
    async with await Staffroom.open(settings=settings) as staff:
        room = await staff.session(session)
        report = await room.consolidate(force=force)
        history = staff.memory.history(room.key).path
        if not report.batches:
            window = room.deps.plan.scenario.settings.memory_window
            console.print(
                f"nothing to consolidate in {room.key} (memory_window {window}; --force folds "
                "all but the newest half-window)"
            )
            return
        console.print(
            f"consolidated {report.messages} messages in {report.batches} batch(es): "
            f"{report.history_lines} line(s) -> {history}, {report.facts} fact(s) -> MEMORY.md"
        )
        for refused in report.refused_facts:
            console.print(f"[yellow]not stored (MEMORY.md is full): {escape(refused)}[/]")


def show_memory(settings: Settings, employee: str, user: str, console: Console) -> int:
    """Print one MEMORY.md and anything odd about it."""
    memory = MemoryStore(settings).memory(employee, user)
    doc = memory.read()
    if not memory.path.exists():
        console.print(f"no memory yet: {memory.path}")
        return 0
    console.print(f"[bold]{memory.path}[/] ({len(memory.text())}/{memory.cap} characters)")
    console.print(memory.render(doc), markup=False, highlight=False)
    for warning in doc.warnings:
        console.print(f"[yellow]warning: {escape(warning)}[/]")
    return 0
