"""``staffroom doctor``: what is wrong with a data folder, and ``--repair`` for what can be."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from framework.doctor import Diagnosis, diagnose, repair
from framework.settings import Settings


async def doctor(settings: Settings, fix: bool, console: Console) -> int:
    """Print every finding with its fix; exit 0 when the folder is sound, 1 when not."""
    found = await diagnose(settings)
    _show(found, settings, console)
    if not fix or found.ok:
        return 0 if found.ok else 1
    console.print("\n[bold]repairing[/]")
    for line in await repair(settings, found):
        console.print(f"  {escape(line)}", highlight=False)
    after = await diagnose(settings)
    console.print()
    _show(after, settings, console)
    return 0 if after.ok else 1


def _show(found: Diagnosis, settings: Settings, console: Console) -> None:
    counts = ", ".join(f"{n} {what}" for what, n in found.checked.items())
    console.print(f"checked {settings.data_dir}: {counts or 'nothing'}", highlight=False)
    if found.ok:
        console.print("[green]no problems found[/]")
        return
    for f in found.findings:
        action = f" [dim](--repair: {f.repair.replace('_', ' ')})[/]" if f.repair else ""
        console.print(
            f"[bold red]problem:[/] {escape(f.where)}: {escape(f.problem)}", highlight=False
        )
        console.print(f"  fix: {escape(f.fix)}{action}", highlight=False)
