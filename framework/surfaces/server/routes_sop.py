"""``/api/sops``: the SOP library for managers, the same operations as ``staffroom sop``.

Reads: the library with each version's metrics, one version, the scoring explanation and a
draft's diff against the best version. Writes: approve, edit as a new version, publish (with
the reviewers the CLI enforces: :func:`framework.sop.review.unapproved`) and deprecate.
Everything goes through ``gateway.staff.sops``; a refused publish is a 409 naming who must
approve.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, replace
from typing import Annotated, Any, Self

from fastapi import APIRouter, Query, Request
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field, model_validator

from framework.errors import InputError
from framework.sop import drafting
from framework.sop.drafting import Edit, save_edit
from framework.sop.edits import diff_steps
from framework.sop.library_io import version_to_card_text
from framework.sop.model import SopVersion
from framework.sop.service import SopService, ensure_known
from framework.sop.store import DEPRECATED_NOTE, PUBLISHED_NOTE
from framework.specs.limits import MAX_ID_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS, MAX_VERSION
from framework.specs.sop_card import SopStep
from framework.specs.sop_text import render_steps
from framework.surfaces.server.auth import Principal, require
from framework.surfaces.server.limits import SOP_EDIT_CHARS
from framework.surfaces.server.problems import ERROR_RESPONSES, Problem
from framework.surfaces.server.state import get_state

router = APIRouter(
    prefix="/api/sops",
    tags=["sops"],
    responses={**ERROR_RESPONSES, 409: {**ERROR_RESPONSES[400], "description": "Needs approval"}},
)

SopId = Annotated[str, PathParam(min_length=1, max_length=MAX_ID_CHARS)]
Version = Annotated[int, PathParam(ge=1, le=MAX_VERSION)]
Reader = Annotated[Principal, require("sop.read")]
Writer = Annotated[Principal, require("sop.write")]
Name = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_CHARS)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApproveBody(_Body):
    """``staffroom sop approve ID@N --by REVIEWER``."""

    reviewer: Name
    note: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)


class PublishBody(_Body):
    """``staffroom sop publish ID@N [--require NAME ...] [--by NAME]``."""

    require: list[Name] = Field(default_factory=list, max_length=50)
    by: Name | None = Field(
        default=None, description="who publishes (default: the token's one person, else its name)"
    )


class DeprecateBody(_Body):
    """``staffroom sop deprecate ID@N --why REASON``."""

    reason: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    by: Name | None = Field(
        default=None, description="who retires it (default: the token's one person, else its name)"
    )


class EditBody(_Body):
    """A new draft made from ``base`` (default: the latest version).

    Either ``card``, the whole card text as ``GET .../versions/{n}`` returns it (its id must
    be this SOP's; its version, status and change_log are set here), or ``steps`` (with
    optional ``goal`` and ``body``) to replace just those.
    """

    author: Name
    note: str = Field(min_length=1, max_length=MAX_TEXT_CHARS, description="why it changed")
    base: int | None = Field(default=None, ge=1, le=MAX_VERSION)
    card: str | None = Field(default=None, max_length=SOP_EDIT_CHARS)
    steps: list[SopStep] | None = Field(default=None, min_length=1, max_length=200)
    goal: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT_CHARS)
    body: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    reviewers: list[Name] = Field(
        default_factory=list, max_length=50, description="who must approve before it is published"
    )

    @model_validator(mode="after")
    def _steps_fit(self) -> Self:
        # As much as a card may hold, so the largest valid edit fits the body cap (limits.py).
        if self.steps is not None:
            size = sum(len(s.model_dump_json()) for s in self.steps)
            if size > SOP_EDIT_CHARS:
                raise ValueError(
                    f"the steps hold {size:,} characters together; at most {SOP_EDIT_CHARS:,}"
                )
        return self


def _person(who: Principal, given: str | None) -> str:
    """The person an SOP action records: ``given`` when the token may act for them (else
    403), else the token's one person (``users: [alice]``), else ``token:<name>``. A name
    the token cannot vouch for is never recorded."""
    if given is not None:
        name = given.strip()
        who.check_user(name)
        return name
    only = who.users[0] if len(who.users) == 1 else None
    if only is not None and not any(c in only for c in "*?["):
        return only
    return f"token:{who.name}"


def _reason(v: SopVersion) -> str:
    # Why the version exists: its newest entry that is not a publish or deprecation note
    # (the viewer shows a retirement's reason on a line of its own).
    for entry in reversed(v.change_log):
        if entry.why != PUBLISHED_NOTE and not entry.why.startswith(DEPRECATED_NOTE):
            return entry.why
    return v.change_log[-1].why if v.change_log else ""


async def _service(request: Request) -> SopService:
    return get_state(request).gateway.staff.sops


async def _version(service: SopService, sop_id: str, version: int) -> SopVersion:
    ensure_known(sop_id, await service.store.sop_ids())
    return await service.store.get(sop_id, version)


async def _metrics(service: SopService, v: SopVersion) -> dict[str, Any]:
    m = await service.store.metrics(v.ref)
    outcomes = await service.store.outcomes(v.ref)
    return {
        **asdict(m),
        "success_rate": m.successes / m.runs if m.runs else None,
        "corrections_per_run": m.corrections / m.runs if m.runs else None,
        # Runs with missing products, empty replies or unrecovered model errors (`sop metrics`).
        "lacking_evidence": sum(1 for o in outcomes if o.failures),
    }


async def _version_dict(service: SopService, v: SopVersion, *, full: bool) -> dict[str, Any]:
    reviewers = await service.store.reviewers(v.sop_id, v.version)
    approved = [a.reviewer for a in v.approvals]
    out: dict[str, Any] = {
        "ref": v.ref,
        "sop_id": v.sop_id,
        "version": v.version,
        "status": str(v.status),
        "goal": v.goal,
        "scope": v.scope,
        "created_at": v.created_at,
        "why": _reason(v),
        "change_log": [asdict(e) for e in v.change_log],
        "approvals": [asdict(a) for a in v.approvals],
        "reviewers": reviewers,
        "awaiting": [r for r in reviewers if r not in approved] if v.status == "draft" else [],
        "metrics": await _metrics(service, v),
    }
    if full:
        out["steps"] = [{**asdict(s), "n": n} for n, s in enumerate(v.steps, start=1)]
        out["text"] = render_steps(v.ref, v.goal, v.steps)
        out["body"] = v.body
        # The card to edit from: approvals are not part of an edit (framework.sop.drafting).
        out["card"] = version_to_card_text(replace(v, approvals=()))
    return out


async def _sop_dict(service: SopService, sop_id: str) -> dict[str, Any]:
    choice = await service.choose(sop_id)
    scores = {c.version.ref: b for c, b in choice.ranked}
    versions = []
    for v in await service.store.versions(sop_id):
        entry = await _version_dict(service, v, full=False)
        breakdown = scores.get(v.ref)
        entry["score"] = breakdown.total if breakdown else None
        entry["ineligible"] = breakdown.ineligible if breakdown else None
        versions.append(entry)
    trial = next((t for t in await service.store.trials(sop_id) if t.open), None)
    latest = versions[-1] if versions else {}
    problem = service.library_problems.get(sop_id)
    return {
        "id": sop_id,
        "goal": latest.get("goal", ""),
        "scope": latest.get("scope", ""),
        "best": choice.winner.version.version if choice.winner else None,
        "trial": asdict(trial) if trial else None,
        "problem": problem.render() if problem else None,
        "versions": versions,
    }


@router.get("", summary="The SOP library: every SOP, its versions, status and metrics")
async def library(request: Request, _: Reader) -> dict[str, Any]:
    """``staffroom sop list`` and ``sop metrics``, for every SOP in the store."""
    service = await _service(request)
    return {"sops": [await _sop_dict(service, s) for s in await service.store.sop_ids()]}


@router.get("/{sop_id}", summary="One SOP: its versions, status and metrics")
async def one_sop(request: Request, sop_id: SopId, _: Reader) -> dict[str, Any]:
    """The library entry of one SOP (404 when the store has no such SOP)."""
    service = await _service(request)
    ensure_known(sop_id, await service.store.sop_ids())
    return await _sop_dict(service, sop_id)


@router.get("/{sop_id}/versions/{version}", summary="One version: steps, change log, review")
async def show(request: Request, sop_id: SopId, version: Version, _: Reader) -> dict[str, Any]:
    """``staffroom sop show ID@N``, with the card text an edit starts from."""
    service = await _service(request)
    return await _version_dict(service, await _version(service, sop_id, version), full=True)


@router.get("/{sop_id}/explain", summary="Why the best version wins")
async def explain(request: Request, sop_id: SopId, _: Reader) -> dict[str, Any]:
    """``staffroom sop explain``: the lines it prints, and every candidate's score terms."""
    service = await _service(request)
    ensure_known(sop_id, await service.store.sop_ids())
    choice = await service.choose(sop_id)
    ranked = [
        {
            "ref": c.version.ref,
            "status": str(c.version.status),
            "total": b.total,
            "ineligible": b.ineligible,
            "terms": [asdict(t) for t in b.terms],
        }
        for c, b in choice.ranked
    ]
    return {
        "sop_id": sop_id,
        "winner": choice.winner.version.ref if choice.winner else None,
        "lines": await service.explain(sop_id),
        "ranked": ranked,
    }


@router.get("/{sop_id}/versions/{version}/diff", summary="A version against the best one")
async def diff(
    request: Request,
    sop_id: SopId,
    version: Version,
    _: Reader,
    against: Annotated[int | None, Query(ge=1, le=MAX_VERSION)] = None,
) -> dict[str, Any]:
    """Step-level and card-text diffs of ``version`` against ``against`` (default: the
    current best version; with none published, the version before it)."""
    service = await _service(request)
    new = await _version(service, sop_id, version)
    if against is None:
        winner = (await service.choose(sop_id)).winner
        against = winner.version.version if winner else (version - 1 or None)
    if against is None:
        return {"ref": new.ref, "against": None, "steps": [], "card": [], "change_log": []}
    old = await service.store.get(sop_id, against)
    card = difflib.unified_diff(
        version_to_card_text(old).splitlines(),
        version_to_card_text(new).splitlines(),
        fromfile=old.ref,
        tofile=new.ref,
        lineterm="",
    )
    return {
        "ref": new.ref,
        "against": old.ref,
        "steps": diff_steps(old.steps, new.steps, old_label=old.ref, new_label=new.ref),
        "card": list(card),
        "change_log": [asdict(e) for e in new.change_log if e.version > old.version],
    }


@router.post("/{sop_id}/versions/{version}/approve", summary="Approve a draft")
async def approve(
    request: Request, sop_id: SopId, version: Version, body: ApproveBody, who: Writer
) -> dict[str, Any]:
    """``staffroom sop approve ID@N --by REVIEWER`` (approving twice changes nothing). A
    token approves only as a person it may act for (its ``users`` patterns): give each
    reviewer a token of their own, or the gate means nothing."""
    reviewer = body.reviewer.strip()
    who.check_user(reviewer)
    service = await _service(request)
    await _version(service, sop_id, version)
    v = await drafting.approve(service, sop_id, version, reviewer, body.note)
    return await _version_dict(service, v, full=True)


@router.post("/{sop_id}/versions/{version}/publish", summary="Publish an approved draft")
async def publish(
    request: Request, sop_id: SopId, version: Version, body: PublishBody, who: Writer
) -> dict[str, Any]:
    """``staffroom sop publish``: every reviewer recorded for the draft and every one in
    ``require`` must have approved it (nobody named: one approval by anyone), else 409
    naming who. Over a published version the draft runs as a trial. Who published it is
    recorded (``by``, bound to the token's ``users`` like an approval)."""
    person = _person(who, body.by)
    service = await _service(request)
    draft = await _version(service, sop_id, version)
    try:
        v = await drafting.publish(service, sop_id, version, required=body.require, by=person)
    except InputError as exc:
        if exc.field != "approvals":
            raise
        approved = {a.reviewer for a in draft.approvals}
        needed = [*await service.store.reviewers(sop_id, version), *body.require]
        awaiting = [r for r in dict.fromkeys(needed) if r not in approved]
        extra = {"awaiting": awaiting}
        raise Problem(
            409, "approval_needed", exc.message, field="approvals", fix=exc.fix, extra=extra
        ) from exc
    out = await _version_dict(service, v, full=True)
    trial = next((t for t in await service.store.trials(sop_id) if t.open), None)
    out["trial"] = trial is not None and trial.ref == v.ref
    return out


@router.post("/{sop_id}/versions/{version}/deprecate", summary="Retire a version")
async def deprecate(
    request: Request, sop_id: SopId, version: Version, body: DeprecateBody, who: Writer
) -> dict[str, Any]:
    """``staffroom sop deprecate ID@N --why REASON``; the version stays for replay. ``by`` is
    bound to the token's ``users`` like an approval."""
    person = _person(who, body.by)
    service = await _service(request)
    await _version(service, sop_id, version)
    v = await service.store.deprecate(sop_id, version, body.reason, by=person)
    return await _version_dict(service, v, full=True)


@router.post("/{sop_id}/versions", status_code=201, summary="Edit: save a new draft version")
async def edit(request: Request, sop_id: SopId, body: EditBody, who: Writer) -> dict[str, Any]:
    """Versions are immutable: an edit is the next version, a draft awaiting review, with
    ``note`` in its change log by ``author``. ``reviewers`` must approve it before
    ``publish`` (nobody named: one approval by anyone)."""
    who.check_user(body.author)
    service = await _service(request)
    edit_ = Edit(
        author=body.author,
        note=body.note,
        base=body.base,
        card=body.card,
        steps=body.steps,
        goal=body.goal,
        body=body.body,
        reviewers=body.reviewers,
    )
    stored = await save_edit(service, sop_id, edit_)
    return await _version_dict(service, stored, full=True)
