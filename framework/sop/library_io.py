"""SOP cards <-> the store: import the admins' ``sop_library/``, export the store for review.

A card is one version (``framework/specs/sop_card.py``). The card format has no approvals
field and forbids unknown ones, so approvals travel in the markdown body, as the last section::

    ## Approvals

    - reviewer: alice
      at: '2026-11-30T09:14:03.512Z'
      note: 顺序合理

:func:`card_to_version` takes that section out of the body and :func:`version_to_card_text`
puts it back, so a version survives export and re-import unchanged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from framework.errors import InputError, SopCardError
from framework.specs.sop_card import SopCard, SopLibrary, load_sop_card

from .model import Approval, ChangeLogEntry, SopVersion, Status, same_content

if TYPE_CHECKING:  # only annotations: `staffroom validate` reads cards without opening a store
    from .store import SopStore

APPROVALS_HEADING = "## Approvals"
_RANK = {Status.DRAFT: 0, Status.PUBLISHED: 1, Status.DEPRECATED: 2}
_PLAIN_ITEM = re.compile(r"\w[\w.-]*")


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What :func:`import_library` did, by ``id@version``."""

    added: list[str] = field(default_factory=list)
    """New versions stored from cards."""
    updated: list[str] = field(default_factory=list)
    """Known versions whose card moved the status forward or added approvals."""
    skipped: list[str] = field(default_factory=list)
    """Known versions the card had nothing new for."""
    problems: dict[str, InputError] = field(default_factory=dict)
    """SOP id -> why a card of it was not imported (only with ``strict=False``)."""

    @property
    def changed(self) -> bool:
        """True if the import wrote anything."""
        return bool(self.added or self.updated)


def card_to_version(card: SopCard) -> SopVersion:
    """The store's version for a card (approvals come from the body's approvals section)."""
    body, approvals = _split_approvals(card.body, card.source)
    return SopVersion(
        sop_id=card.id,
        version=card.version,
        goal=card.goal,
        scope=card.scope,
        steps=card.to_steps(),
        status=Status(card.status),
        change_log=tuple(ChangeLogEntry(e.version, e.why, e.by, e.from_) for e in card.change_log),
        approvals=approvals,
        body=body,
    )


def version_to_card_text(v: SopVersion) -> str:
    """The card file for a version: YAML front matter shaped like ``sop_library``'s cards,
    then the body and, if any, the approvals section. ``created_at`` is not part of a card."""
    out = ["---", f"id: {_scalar(v.sop_id)}", f"version: {v.version}"]
    out += [f"scope: {_scalar(v.scope)}", f"goal: {_scalar(v.goal)}"]
    out += [f"status: {Status(v.status).value}", "steps:"]
    for step in v.steps:
        one = len(step.speakers) == 1
        out.append(f"  - speaker: {_scalar(step.speakers[0]) if one else _flow(step.speakers)}")
        out.append(f"    do: {_scalar(step.do)}")
        if step.tools:
            out.append(f"    tools: {_flow(step.tools)}")
        if step.produces:
            out.append(f"    produces: {_flow(step.produces)}")
        if step.waits_for_input:
            out.append("    waits_for_input: true")
        if step.parallel:
            out.append("    parallel: true")
        if step.fallback is not None:
            out.append(f"    fallback: {_scalar(step.fallback)}")
    if v.change_log:
        out.append("change_log:")
    for entry in v.change_log:
        out += [f"  - version: {entry.version}", f"    why: {_scalar(entry.why)}"]
        out += [f"    by: {_scalar(entry.by)}"] if entry.by is not None else []
        out += [f"    from: {_scalar(entry.source)}"] if entry.source is not None else []
    out.append("---")
    parts = [v.body.strip("\n")] if v.body.strip() else []
    if v.approvals:
        parts.append(f"{APPROVALS_HEADING}\n\n{_approvals_yaml(v.approvals)}")
    text = "\n\n".join(parts)  # the loader strips the newlines around the body anyway
    return "\n".join(out) + "\n" + (f"{text}\n" if text else "")


async def import_library(
    store: SopStore, folder: str | Path, *, strict: bool = True
) -> ImportReport:
    """Import every card under ``folder`` (a missing folder imports nothing).

    Idempotent: a version already stored with the same procedure is skipped. A card whose
    version exists with different content, or that skips a number, is a
    :class:`SopCardError` naming the file. For a known version, the card may only move the
    status forward (draft -> published -> deprecated), add approvals, and declare products
    for steps stored before steps could declare them; a store that is further along (a
    version deprecated by its metrics) is never moved back.
    """
    report = ImportReport()
    library = SopLibrary(folder, strict=strict)  # validates every card, sorted by id, version
    report.problems.update(library.broken())
    for card in library:
        if card.id in report.problems:
            continue  # a later version of it is broken: import none until it is fixed
        try:
            await _import_card(store, card, report)
        except SopCardError as exc:
            if strict:
                raise
            report.problems.setdefault(card.id, exc)
    return report


async def import_problems(store: SopStore | None, folder: str | Path) -> dict[str, InputError]:
    """What :func:`import_library` (``strict=False``) would refuse of the cards under
    ``folder``, by SOP id, without writing anything (``staffroom validate``; ``store`` None:
    an empty one). Cards that do not load are left out: validation reports them itself."""
    library = SopLibrary(folder, strict=False)
    problems: dict[str, InputError] = {}
    held: dict[str, dict[int, SopVersion]] = {}
    for card in library:
        if card.id in problems or card.id in library.broken():
            continue  # as the import: nothing of an SOP after its first refused card
        if card.id not in held:
            stored = await store.versions(card.id) if store is not None else []
            held[card.id] = {v.version: v for v in stored}
        known = held[card.id]
        try:
            version = card_to_version(card)
        except SopCardError as exc:  # its approvals section: the import refuses it too
            problems[card.id] = exc
            continue
        if (refusal := _refusal(card, version, known)) is not None:
            problems[card.id] = refusal
        else:
            known.setdefault(card.version, version)
    return problems


def _refusal(
    card: SopCard, version: SopVersion, known: dict[int, SopVersion]
) -> SopCardError | None:
    """Why a card cannot be imported into a store holding ``known`` of its SOP (a version
    stored with other content, or one that skips a number), or None. The import and
    :func:`import_problems` both ask here, so ``validate`` refuses what ``run`` refuses."""
    stored, expected = known.get(card.version), max(known, default=0) + 1
    if stored is None and card.version == expected:
        return None
    if stored is None:  # versions are numbered 1, 2, 3...: a gap would be a lost version
        why, fix = "skips a number", f"add it as {card.id}@{expected}"
    elif same_content(stored, version) or _adds_products_only(stored, version):
        return None
    else:
        why, fix = "is already stored with different content", "save the change as a new "
        fix += f"card with version: {expected}"
    return SopCardError(
        f"SOP {card.ref} {why}",
        file=card.source,
        line=card.line_of("version"),
        field="version",
        fix=f"versions are immutable: {fix}",
    )


async def _import_card(store: SopStore, card: SopCard, report: ImportReport) -> None:
    version = card_to_version(card)
    known = {v.version: v for v in await store.versions(card.id)}
    if (refusal := _refusal(card, version, known)) is not None:
        raise refusal
    stored = known.get(card.version)
    added_products = False
    if stored is not None and _adds_products_only(stored, version):
        # A data folder made before cards declared products (the shipped card gained
        # them): refusing it would stop every room at start.
        stored, added_products = await store.add_products(version), True
    if stored is None:
        try:
            await store.add_version(version)
        except SopCardError as exc:  # a gap in the numbers, or another process won a race
            line = card.line_of("version")
            raise SopCardError(
                exc.message, file=card.source, line=line, field="version", fix=exc.fix
            ) from exc
        report.added.append(card.ref)
    elif await _advance(store, stored, version, card.source) or added_products:
        report.updated.append(card.ref)
    else:
        report.skipped.append(card.ref)


async def export_library(store: SopStore, folder: str | Path) -> list[Path]:
    """Write every stored version as ``folder/<sop_id>/v<N>.md``; return the paths.

    A version that already has a card in ``folder`` (say ``tech_article/v1.md``) is written
    to that file, so exporting into ``sop_library/`` updates cards instead of duplicating
    them. Files whose text is already right are left untouched (clean ``git status``).
    """
    folder = Path(folder)
    present = _cards_in(folder)
    paths: list[Path] = []
    for sop_id in await store.sop_ids():
        dirs = [p.parent for (i, _), p in sorted(present.items()) if i == sop_id]
        home = dirs[-1] if dirs else folder / sop_id
        for v in await store.versions(sop_id):
            path = present.get((sop_id, v.version), home / f"v{v.version}.md")
            text = version_to_card_text(v)
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(path)  # a reader never sees half a card
            paths.append(path)
    return paths


async def _advance(store: SopStore, stored: SopVersion, card: SopVersion, source: Path) -> bool:
    # Approvals first: a card that adds an approval and publishes says both things at once.
    changed = False
    have = {a.reviewer for a in stored.approvals}
    if stored.status is not Status.DEPRECATED:
        for a in card.approvals:
            if a.reviewer not in have:
                await store.approve(stored.sop_id, stored.version, a.reviewer, a.note, at=a.at)
                changed = True
    if _RANK[card.status] > _RANK[stored.status]:
        if card.status is Status.PUBLISHED:
            # An admin's card is the admin path: its status is the decision (no reviewer gate).
            await store.publish(stored.sop_id, stored.version)
        else:
            reason = f"marked deprecated in {source}"
            await store.deprecate(stored.sop_id, stored.version, reason, by="admin")
        changed = True
    return changed


def _adds_products_only(stored: SopVersion, card: SopVersion) -> bool:
    # The card is the stored procedure plus products, and the stored steps declare none.
    if any(s.produces for s in stored.steps) or not any(s.produces for s in card.steps):
        return False
    bare = replace(card, steps=tuple(replace(s, produces=()) for s in card.steps))
    return same_content(stored, bare)


def _cards_in(folder: Path) -> dict[tuple[str, int], Path]:
    found: dict[tuple[str, int], Path] = {}
    for path in sorted(folder.rglob("*.md")) if folder.is_dir() else []:
        if path.name.lower() == "readme.md":
            continue
        try:
            card = load_sop_card(path)
        except SopCardError:
            continue  # not a card we can read: never the file we would overwrite by name
        found.setdefault((card.id, card.version), path)
    return found


def _split_approvals(body: str, source: Path) -> tuple[str, tuple[Approval, ...]]:
    lines = body.split("\n")
    heads = [n for n, line in enumerate(lines) if line.strip() == APPROVALS_HEADING]
    if not heads:
        return body, ()
    fix = "write approvals as a YAML list: '- reviewer: alice' with 'at:' and 'note:' below"
    try:
        data: Any = yaml.safe_load("\n".join(lines[heads[-1] + 1 :])) or []
    except yaml.YAMLError as exc:
        raise SopCardError(f"approvals section is not YAML: {exc}", file=source, fix=fix) from None
    if not isinstance(data, list) or not all(
        isinstance(item, dict) and {"reviewer", "at"} <= item.keys() <= {"reviewer", "at", "note"}
        for item in data
    ):
        raise SopCardError(
            "approvals section is malformed", file=source, field="approvals", fix=fix
        )
    approvals = tuple(
        Approval(
            str(i["reviewer"]), str(i["at"]), None if i.get("note") is None else str(i["note"])
        )
        for i in data
    )
    return "\n".join(lines[: heads[-1]]).strip("\n"), approvals


def _approvals_yaml(approvals: tuple[Approval, ...]) -> str:
    out: list[str] = []
    for a in approvals:
        out += [f"- reviewer: {_scalar(a.reviewer)}", f"  at: {_scalar(a.at)}"]
        out += [f"  note: {_scalar(a.note)}"] if a.note is not None else []
    return "\n".join(out)


def _scalar(value: str) -> str:
    """A string as a one-line YAML scalar: plain when safe, quoted when YAML would misread it."""
    text = yaml.safe_dump(value, allow_unicode=True, width=1 << 30)
    text = text.removesuffix("\n").removesuffix("\n...")
    # Multi-line strings come out folded over several lines; JSON is valid YAML on one line.
    return json.dumps(value, ensure_ascii=False) if "\n" in text else text


def _flow(items: tuple[str, ...]) -> str:
    # Inside [...] a plain scalar may not hold , [ ] { } -- quote anything but simple names.
    quoted = [
        i if _PLAIN_ITEM.fullmatch(i) and _scalar(i) == i else json.dumps(i, ensure_ascii=False)
        for i in items
    ]
    return f"[{', '.join(quoted)}]"


__all__ = [
    "APPROVALS_HEADING",
    "ImportReport",
    "card_to_version",
    "export_library",
    "import_library",
    "import_problems",
    "version_to_card_text",
]
