"""``staffroom doctor``: what is wrong with a data folder, and ``--repair`` for what can be."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from framework.doctor import Diagnosis, diagnose, repair
from framework.phrases import Language, Phrase
from framework.settings import Settings
from framework.surfaces.cli.console import labels_language
from framework.surfaces.cli.event_labels import COUNT_SEPARATOR

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


async def doctor(settings: Settings, fix: bool, console: Console) -> int:
    """Print every finding with its fix; exit 0 when the folder is sound, 1 when not."""
    found = await diagnose(settings)
    _show(found, settings, console)
    if not fix or found.ok:
        return 0 if found.ok else 1
    console.print(f"\n[bold]{REPAIRING(labels_language(console))}[/]")
    for line in await repair(settings, found):
        console.print(f"  {escape(line)}", highlight=False)
    after = await diagnose(settings)
    console.print()
    _show(after, settings, console)
    return 0 if after.ok else 1


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
