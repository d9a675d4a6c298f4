"""Edits over HTTP: a card or fields -> a new draft version, with what an edit may not do.

An edit is the next version of its SOP, a draft awaiting review. It may not move the SOP's
scope (where the published version is offered), carry approvals in its text, or shed the
reviewers the draft it edits awaited; its reviewers are stored with it in one transaction.
"""

from __future__ import annotations

import re
from dataclasses import asdict, replace
from pathlib import Path
from typing import Protocol

from framework.errors import InputError, SopCardError
from framework.sessions.events import utc_now
from framework.sop.library_io import card_to_version
from framework.sop.model import ChangeLogEntry, SopVersion, Status, Step, same_content
from framework.sop.service import SopService
from framework.specs.sop_card import SopCard, SopStep, split_front_matter
from framework.specs.yaml_loader import load_yaml_text, validate


class EditFields(Protocol):
    """What an edit request carries (``routes_sop.EditBody``)."""

    author: str
    note: str
    card: str | None
    steps: list[SopStep] | None
    goal: str | None
    body: str | None


async def add(
    service: SopService,
    base: SopVersion,
    changed: SopVersion,
    number: int,
    body: EditFields,
    reviewers: list[str],
) -> SopVersion:
    entry = ChangeLogEntry(number, body.note, by=body.author, source=f"edit of {base.ref}")
    draft = replace(
        changed,
        version=number,
        status=Status.DRAFT,
        change_log=(*base.change_log, entry),
        approvals=(),
        created_at=utc_now(),
    )
    sop_id = base.sop_id
    same = next((v for v in await service.store.versions(sop_id) if same_content(v, draft)), None)
    if same is not None:
        raise InputError(
            f"the edit is the same procedure as {same.ref} ({same.status})",
            field="card" if body.card is not None else "steps",
            fix="change the steps, goal, scope or notes; a version is saved only when it differs",
        )
    return await service.store.add_version(draft, reviewers=reviewers)


def keeps_scope_and_approvals(base: SopVersion, changed: SopVersion) -> None:
    # The scope says where the *published* SOP is offered (one column per SOP): a draft
    # nobody reviewed must not move it. Approvals come from POST .../approve, never from text.
    if changed.scope != base.scope:
        raise SopCardError(
            f"an edit keeps the SOP's scope '{base.scope}', not '{changed.scope}'",
            field="scope",
            fix=f"write `scope: {base.scope}`; a new scope is a new SOP (a new card)",
        )
    if re.search(r"^\s*#+\s*approvals\b", changed.body, re.IGNORECASE | re.MULTILINE):
        raise SopCardError(
            "the notes hold an approvals section",
            field="body",
            fix="remove it: approvals are given with POST .../approve, one per reviewer",
        )


def from_fields(base: SopVersion, body: EditFields) -> SopVersion:
    if body.steps is None and body.goal is None and body.body is None:
        raise InputError(
            "the edit changes nothing",
            field="steps",
            fix="send `card` (the card text) or any of `steps`, `goal`, `body`",
        )
    steps = body.steps or [card_step(s) for s in base.steps]
    data = {
        "id": base.sop_id,
        "version": base.version,
        "scope": base.scope,
        "goal": body.goal if body.goal is not None else base.goal,
        "steps": [s.model_dump() for s in steps],
        "body": body.body if body.body is not None else base.body,
    }
    where = Path(f"{base.sop_id}.md")
    return card_to_version(validate(SopCard, data, file=where, lines={}, error_cls=SopCardError))


def card_step(step: Step) -> SopStep:
    data = asdict(step)
    speakers = data.pop("speakers")
    return SopStep(**{**data, "speaker": speakers[0] if len(speakers) == 1 else list(speakers)})


def from_card(sop_id: str, text: str) -> SopVersion:
    # The error body has no line: say it in the message, counted in the text as sent.
    try:
        return parse_card(sop_id, text)
    except InputError as exc:
        at = f"card line {exc.line}: " if exc.line is not None else "card: "
        raise SopCardError(at + exc.message, field=exc.field or "card", fix=exc.fix) from exc


def parse_card(sop_id: str, text: str) -> SopVersion:
    where = Path(f"{sop_id}.md")
    yaml_text, notes, first = split_front_matter(text, where)
    data, lines = load_yaml_text(yaml_text, file=where, error_cls=SopCardError, first_line=first)
    if not isinstance(data, dict):
        raise SopCardError("the front matter is not a mapping of fields", file=where, line=first)
    if "body" in data:
        raise SopCardError(
            "'body' is not a front-matter field",
            file=where,
            line=lines.get(("body",)),
            field="body",
            fix="write the notes after the closing '---' instead",
        )
    if data.get("id", sop_id) != sop_id:
        raise SopCardError(
            f"the card's id is '{data['id']}', not '{sop_id}'",
            file=where,
            line=lines.get(("id",)),
            field="id",
            fix=f"an edit stays in its SOP: write `id: {sop_id}` (a new SOP is a new card)",
        )
    # The server numbers the version, makes it a draft and writes its change log entry.
    data = {k: v for k, v in data.items() if k not in ("version", "status", "change_log")}
    data.update(id=sop_id, version=1, body=notes)
    card = validate(SopCard, data, file=where, lines=lines, error_cls=SopCardError)
    return card_to_version(card)
