"""What ``staffroom sop list|show|metrics|report|import`` print, labelled in the console's
language (:func:`~framework.surfaces.cli.render.labels_language`); ids, names and what people
wrote are shown as they are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from framework.errors import UnknownNameError
from framework.phrases import Phrase
from framework.surfaces.cli.console import labels_language

if TYPE_CHECKING:  # `staffroom --help` loads this module: the service (and its model) stay out
    from framework.sop.library_io import ImportReport
    from framework.sop.model import SopVersion
    from framework.sop.service import SopService

LIST_COLUMNS = Phrase(
    en="sop|version|status|scope|runs|success|corrections|why",
    zh="SOP|版本|状态|范围|运行|成功率|纠正|原因",
)
"""Column headings of ``sop list``, ``|``-separated."""
METRICS_COLUMNS = Phrase(
    en="version|status|referenced|runs|success|corrections|mean s|replaced|lacking evidence"
    "|hit rate per user",
    zh="版本|状态|被引用|运行|成功|纠正|平均秒数|被取代|缺少证据|各用户命中率",
)
"""Column headings of ``sop metrics``, ``|``-separated."""
FROM = Phrase(
    en=" (from {source})",
    zh="（来自 {source}）",
)
APPROVED = Phrase(
    en="approved by {reviewer} at {at}",
    zh="{reviewer} 于 {at} 批准",
)
APPROVED_BY = Phrase(
    en="{ref}: approved by {reviewers}",
    zh="{ref}：已由 {reviewers} 批准",
)
REVIEWERS = Phrase(
    en="reviewers: {names}",
    zh="审阅人：{names}",
)
AWAITING = Phrase(
    en="awaiting approval from: {names}",
    zh="等待批准：{names}",
)
VERSIONS = Phrase(
    en="{sop}: {n} version(s)",
    zh="{sop}：{n} 个版本",
)
VERSION_LINE = Phrase(
    en="runs {runs}, corrections/run {per_run}, replaced {replaced}x",
    zh="运行 {runs} 次，每次运行纠正 {per_run} 次，被取代 {replaced} 次",
)
NO_EVIDENCE = Phrase(
    en="{count}x no evidence: {what}",
    zh="{count} 次 缺少证据：{what}",
)
HIT_RATE = Phrase(
    en="hit rate per user: {users}",
    zh="各用户命中率：{users}",
)
REPORT_TIP = Phrase(
    en="Use the recurring corrections to improve the role prompts, tools or the scenario template.",
    zh="用反复出现的纠正来改进角色提示词、工具或场景模板。",
)
NO_CARDS = Phrase(
    en="no SOP cards (*.md) under {source}: nothing imported",
    zh="{source} 下没有 SOP 卡片（*.md）：没有导入",
)
IMPORTED = Phrase(
    en="imported {source}: {n} card(s)",
    zh="已导入 {source}：{n} 张卡片",
)
ADDED = Phrase(
    en="added",
    zh="新增",
)
UPDATED = Phrase(
    en="updated (status or approvals)",
    zh="已更新（状态或批准）",
)
ALREADY_STORED = Phrase(
    en="already stored",
    zh="已存在",
)


async def list_versions(service: SopService, console: Console) -> None:
    """``sop list``: every SOP's versions, status and run counts as a table."""
    table = Table(*LIST_COLUMNS(labels_language(console)).split("|"))
    for sop_id in await service.store.sop_ids():
        for v in await service.store.versions(sop_id):
            m = await service.store.metrics(v.ref)
            why = v.change_log[-1].why if v.change_log else ""
            rate = f"{m.successes / m.runs:.0%}" if m.runs else "-"
            row = (sop_id, str(v.version), str(v.status), v.scope, str(m.runs), rate)
            table.add_row(*row, str(m.corrections), escape(why))
    console.print(table)


async def show_version(service: SopService, v: SopVersion, console: Console) -> None:
    """``sop show``: a version's steps, change log, approvals and who is still to approve."""
    from framework.specs.sop_card import render_steps

    lang = labels_language(console)
    console.print(f"[bold]{v.ref}[/] · {v.status} · {escape(v.scope)}")
    console.print(escape(render_steps(v.ref, v.goal, v.steps)))
    for entry in v.change_log:
        source = FROM(lang, source=entry.source) if entry.source else ""
        console.print(
            f"  v{entry.version}: {escape(entry.why)} — {entry.by or '?'}{escape(source)}"
        )
    for approval in v.approvals:
        console.print(f"  {escape(APPROVED(lang, reviewer=approval.reviewer, at=approval.at))}")
    reviewers = await service.store.reviewers(v.sop_id, v.version)
    if reviewers:
        console.print(f"  {escape(REVIEWERS(lang, names=', '.join(reviewers)))}")
    await print_waiting(service, v, console, reviewers)


async def print_waiting(
    service: SopService, v: SopVersion, console: Console, reviewers: list[str] | None = None
) -> None:
    """The reviewers a draft still awaits (nothing for another status)."""
    if reviewers is None:
        reviewers = await service.store.reviewers(v.sop_id, v.version)
    approved = {a.reviewer for a in v.approvals}
    waiting = [r for r in reviewers if r not in approved]
    if waiting and v.status == "draft":
        names = ", ".join(waiting)
        console.print(f"  {escape(AWAITING(labels_language(console), names=names))}")


async def metrics_table(service: SopService, sop_id: str, console: Console) -> None:
    """``sop metrics``: run metrics per version as a table."""
    table = Table(*METRICS_COLUMNS(labels_language(console)).split("|"))
    for v in await service.store.versions(sop_id):
        m = await service.store.metrics(v.ref)
        hits = ", ".join(f"{u} {r:.0%}" for u, r in sorted(m.hit_rate_by_user.items()))
        # Runs with missing products, empty replies or unrecovered model errors.
        lacking = sum(1 for o in await service.store.outcomes(v.ref) if o.failures)
        table.add_row(
            str(v.version),
            str(v.status),
            str(m.references),
            str(m.runs),
            f"{m.successes}/{m.runs}",
            str(m.corrections),
            f"{m.mean_duration_s:.1f}",
            str(m.replaced),
            f"{lacking}/{m.runs}",
            escape(hits) or "-",
        )
    console.print(table)


async def report(service: SopService, sop_id: str, console: Console) -> None:
    """``sop report``: per version the runs, corrections and what lacked evidence, the hit
    rate per user, and conflicting requests."""
    lang = labels_language(console)
    versions = await service.store.versions(sop_id)
    console.print(f"[bold]{escape(VERSIONS(lang, sop=sop_id, n=len(versions)))}[/]")
    for v in versions:
        m = await service.store.metrics(v.ref)
        per_run = f"{m.corrections / m.runs if m.runs else 0.0:.2f}"
        line = VERSION_LINE(lang, runs=m.runs, per_run=per_run, replaced=m.replaced)
        console.print(f"  {v.ref} \\[{v.status}] {escape(line)}")
        kinds: dict[str, int] = {}
        failures: dict[str, int] = {}
        for outcome in await service.store.outcomes(v.ref):
            for c in outcome.corrections:
                kinds[f"{c.kind}: {c.detail}"] = kinds.get(f"{c.kind}: {c.detail}", 0) + 1
            for failure in outcome.failures:
                failures[failure] = failures.get(failure, 0) + 1
        for text, count in sorted(kinds.items(), key=lambda kv: -kv[1])[:5]:
            console.print(f"    {count}x {escape(text)}")
        for text, count in sorted(failures.items(), key=lambda kv: -kv[1])[:5]:
            console.print(f"    {escape(NO_EVIDENCE(lang, count=count, what=text))}")
        users = ", ".join(f"{u} {r:.0%}" for u, r in sorted(m.hit_rate_by_user.items()))
        if users:
            console.print(f"    {escape(HIT_RATE(lang, users=users))}")
    # Opposing requests and held removals are for reviewers to settle, not the rules.
    try:
        conflicts = await service.conflicts(sop_id)
    except UnknownNameError:  # no published version: nothing to read them against
        conflicts = []
    for conflict in conflicts:
        console.print(f"  [yellow]{escape(conflict)}[/]")
    console.print(REPORT_TIP(lang))


def print_import(source: Path, found: ImportReport, console: Console) -> None:
    """``sop import``: one line per kind of change, naming the versions (none at all is
    said, too)."""
    lang = labels_language(console)
    total = len(found.added) + len(found.updated) + len(found.skipped)
    if not total:
        console.print(escape(NO_CARDS(lang, source=source)))
        return
    console.print(escape(IMPORTED(lang, source=source, n=total)))
    for label, refs in (
        (ADDED, found.added),
        (UPDATED, found.updated),
        (ALREADY_STORED, found.skipped),
    ):
        if refs:
            console.print(f"  {label(lang)}: {escape(', '.join(refs))}")


__all__ = [
    "list_versions",
    "metrics_table",
    "print_import",
    "print_waiting",
    "report",
    "show_version",
]
