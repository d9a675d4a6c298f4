"""SOP drafting rules: a card or fields -> a new draft version, with what an edit may not do.

An edit is the next version of its SOP, a draft awaiting review. It may not move the SOP's
scope (where the published version is offered), carry approvals in its text, or shed the
reviewers the draft it edits awaited; its reviewers are stored with it in one transaction.

:func:`save_edit` is the one way in: ``POST /api/sops/{id}/versions`` and ``staffroom sop
edit`` both call it, so the two surfaces cannot drift apart (they only translate): a refusal
is said in the same words on both, its fix in the surface's own terms (:class:`Surface`).
Approving and publishing go through :func:`approve` and :func:`publish` the same way, and a
person's name through :func:`person_named`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from framework.errors import InputError, SopCardError
from framework.phrases import Phrase
from framework.sessions.events import utc_now
from framework.sop.library_io import card_to_version
from framework.sop.model import ChangeLogEntry, SopVersion, Status, Step, same_content
from framework.sop.service import SopService, ensure_known
from framework.specs.limits import MAX_LABEL_CHARS
from framework.specs.sop_card import SopCard, SopStep, split_front_matter, with_notes
from framework.specs.yaml_loader import load_yaml_text, validate


@dataclass(frozen=True)
class Surface:
    """How a surface names what an edit carries, so a refused edit's field and fix are in the
    terms of the surface the person used (the refusal itself is the same on both)."""

    card: str
    """The whole card text."""
    fields: str
    """What an edit by fields is named by, for a refusal of one."""
    change: str
    """The fix of an edit that changes nothing: what to give instead."""


HTTP = Surface("card", "steps", "send `card` (the card text) or any of `steps`, `goal`, `body`")
"""``POST /api/sops/{id}/versions``: the body's fields."""
CLI = Surface("--card", "--goal", "give --card FILE (the whole card, edited) or --goal TEXT")
"""``staffroom sop edit``: its options."""

NO_NAME = Phrase(
    en="the name is empty",
    zh="名字是空的",
)
LONG_NAME = Phrase(
    en="the name is {n} characters long; at most {most}",
    zh="名字有 {n} 个字符；最多 {most} 个",
)
NAME_FIX = Phrase(
    en="give {field} NAME: the person's name, 1 to {most} characters",
    zh="用 {field} 名字 写明是谁（1 到 {most} 个字符）",
)


@dataclass(frozen=True)
class Edit:
    """What an edit carries, from either surface (the HTTP body, the CLI's options).

    Either ``card``, the whole card text (its id must be the SOP's; its version, status and
    change_log are set here), or any of ``steps``, ``goal`` and ``body`` to replace just those.
    """

    author: str
    """Who wrote the edit (its change log entry's ``by``)."""
    note: str
    """Why it changed (its change log entry)."""
    base: int | None = None
    """The version it edits (None: the latest)."""
    card: str | None = None
    steps: Sequence[SopStep] | None = None
    goal: str | None = None
    body: str | None = None
    reviewers: Sequence[str] = ()
    """Who must approve it before it is published, beside those the edited draft awaited."""
    surface: Surface = HTTP
    """Where the edit came from: a refusal's field and fix use its terms."""


async def save_edit(service: SopService, sop_id: str, edit: Edit) -> SopVersion:
    """Save ``edit`` of ``sop_id`` as its next version, a draft awaiting review.

    Refused (:class:`SopCardError` / :class:`InputError`, naming the field and the fix) when
    it moves the scope, carries approvals in its text, changes nothing, or is the same
    procedure as a stored version. An edit of a draft keeps the reviewers that draft awaited.
    """
    ensure_known(sop_id, await service.store.sop_ids())
    base = await service.store.get(sop_id, edit.base)
    changed = from_card(sop_id, edit.card) if edit.card is not None else from_fields(base, edit)
    keeps_scope_and_approvals(base, changed)
    # An edit of a draft keeps the reviewers it awaited: an edit cannot shed a reviewer.
    inherited = (
        await service.store.reviewers(sop_id, base.version) if base.status == "draft" else []
    )
    reviewers = list(dict.fromkeys([*inherited, *(r.strip() for r in edit.reviewers)]))
    for _attempt in range(3):  # another edit may take the number first: take the next one
        number = await service.store.next_version(sop_id)
        try:
            return await _add(service, base, changed, number, edit, reviewers)
        except SopCardError as exc:
            if exc.field != "version":
                raise
    raise SopCardError(
        "other edits kept taking the next version number",
        field="version",
        fix="send the edit again",
    )


async def approve(
    service: SopService, sop_id: str, version: int, reviewer: str, note: str | None = None
) -> SopVersion:
    """Record ``reviewer``'s approval of the draft ``sop_id@version`` (approving twice
    changes nothing); the name is stored trimmed, whichever surface it came from."""
    return await service.store.approve(sop_id, version, reviewer.strip(), note)


async def publish(
    service: SopService, sop_id: str, version: int, *, required: Sequence[str], by: str | None
) -> SopVersion:
    """Publish the draft once its recorded reviewers and every one of ``required`` (names
    trimmed) approved it, as :meth:`SopService.publish` decides; ``by`` goes to its log."""
    return await service.publish(sop_id, version, required=[r.strip() for r in required], by=by)


def person_named(name: str, *, field: str, language: str = "en") -> str:
    """``name`` as an SOP action records it (a reviewer, who published, retired or wrote a
    version): trimmed, and refused (:class:`InputError` naming ``field``, the surface's name
    for it) when empty or longer than a label (:data:`MAX_LABEL_CHARS`), as the server's
    bodies refuse it."""
    fix = NAME_FIX(language, field=field, most=MAX_LABEL_CHARS)
    if not name.strip():
        raise InputError(NO_NAME(language), field=field, fix=fix)
    if len(name) > MAX_LABEL_CHARS:
        said = LONG_NAME(language, n=len(name), most=MAX_LABEL_CHARS)
        raise InputError(said, field=field, fix=fix)
    return name.strip()


async def _add(
    service: SopService,
    base: SopVersion,
    changed: SopVersion,
    number: int,
    body: Edit,
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
            field=body.surface.card if body.card is not None else body.surface.fields,
            fix="change the steps, goal, scope or notes; a version is saved only when it differs",
        )
    return await service.store.add_version(draft, reviewers=reviewers)


def keeps_scope_and_approvals(base: SopVersion, changed: SopVersion) -> None:
    # The scope says where the *published* SOP is offered (one column per SOP): a draft
    # nobody reviewed must not move it. Approvals come from `approve`, never from text.
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
            fix="remove it: approvals are given one per reviewer, with POST .../approve "
            "or `staffroom sop approve ID@N --by NAME`",
        )


def from_fields(base: SopVersion, body: Edit) -> SopVersion:
    if body.steps is None and body.goal is None and body.body is None:
        fix = body.surface.change
        raise InputError("the edit changes nothing", field=body.surface.fields, fix=fix)
    steps = list(body.steps or [card_step(s) for s in base.steps])
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
    data = with_notes(data, notes, where, lines)
    if data.get("id", sop_id) != sop_id:
        raise SopCardError(
            f"the card's id is '{data['id']}', not '{sop_id}'",
            file=where,
            line=lines.get(("id",)),
            field="id",
            fix=f"an edit stays in its SOP: write `id: {sop_id}` (a new SOP is a new card)",
        )
    # The store numbers the version, makes it a draft and writes its change log entry.
    data = {k: v for k, v in data.items() if k not in ("version", "status", "change_log")}
    data.update(id=sop_id, version=1)
    card = validate(SopCard, data, file=where, lines=lines, error_cls=SopCardError)
    return card_to_version(card)


__all__ = ["CLI", "HTTP", "Edit", "Surface", "approve", "person_named", "publish", "save_edit"]
