"""Proposals: the next version of an SOP from its runs, with at most one open draft.

A proposal builds on the SOP's open draft when there is one (else on the version the run
ran on), so a new draft carries the open one's changes forward; the open draft is then
retired ("superseded"), and its approvals do not carry over: reviewers approve the new draft.
Versions stay immutable: nothing is edited in place, a new number is made. A proposal whose
steps equal an existing version re-selects it instead of making a copy; one equal to a
retired version is not made again, unless it puts steps back as they were before a dispute
(:class:`~framework.sop.revision_plan.RevisionPlan`), which is exactly what is wanted then.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from framework.phrases import Phrase
from framework.sessions.events import utc_now
from framework.sop.edits import EditOp, apply_edits
from framework.sop.model import ChangeLogEntry, SopVersion, Status
from framework.sop.revisers import Evidence, Proposal, Reviser
from framework.sop.revision_plan import revision_reason
from framework.sop.store import SopStore

SUPERSEDED = "superseded"
"""The change_log ``by`` of a draft retired by the next proposal (it never ran: it does not
keep a later proposal with its steps from being made, as a rolled-back version does)."""

SUPERSEDED_WHY = Phrase(
    en="superseded by draft {new}, which carries its changes forward",
    zh="被草稿 {new} 取代，其改动已并入新草稿",
)
REPLACES = Phrase(
    en="{new} replaces the open draft {old} (now retired) and carries its changes forward; "
    "approvals start over",
    zh="{new} 取代了未发布的草稿 {old}（已停用），并保留了它的改动；审批需要重新进行",
)
APPROVE_AGAIN = Phrase(
    en="approved {old} before: {people}; approve {new} again",
    zh="之前批准了 {old}：{people}；请重新批准 {new}",
)
ALSO_RETIRED = Phrase(
    en="superseded by draft {new}, as an SOP has one open draft (compare: staffroom sop diff "
    "{sop_id} {old} {number})",
    zh="被草稿 {new} 取代：一个 SOP 只保留一个未发布的草稿（对比：staffroom sop diff {sop_id} "
    "{old} {number}）",
)
WITHDRAWN_WHY = Phrase(
    en="withdrawn: the runs now ask for the steps of {ref}",
    zh="撤回：运行现在要求 {ref} 的步骤",
)
WITHDRAWN = Phrase(
    en="the open draft {old} is withdrawn (retired): the runs now ask for the steps of {ref}",
    zh="未发布的草稿 {old} 已撤回（停用）：运行现在要求 {ref} 的步骤",
)
NOT_AGAIN = Phrase(
    en="not proposed again: the runs ask for the steps of {ref} ({why})",
    zh="不再提出：运行要求的是 {ref} 的步骤（{why}）",
)
ASKED_AGAIN = Phrase(
    en="the runs ask for the steps of {ref} again: {reason}",
    zh="运行再次要求 {ref} 的步骤：{reason}",
)


@dataclass(frozen=True, slots=True)
class Revision:
    """A version proposed from outcomes."""

    version: SopVersion
    ops: list[EditOp]
    published: bool
    by: str = "rules"
    """Who proposed the edits (the change log's ``by``): ``model:<label>`` or ``rules ...``."""
    conflicts: list[str] = field(default_factory=list)
    """What the runs asked that was left for reviewers (see :mod:`framework.sop.claims`)."""
    reselected: bool = False
    """The edits lead to an existing version, ``version``, which is chosen again."""
    supersedes: str | None = None
    """The open draft this proposal retired (its changes carried forward, or withdrawn)."""
    notes: list[str] = field(default_factory=list)
    """What happened to the open draft and its approvals, for the people in the room."""


def open_draft(versions: Sequence[SopVersion], running: SopVersion) -> SopVersion | None:
    """The SOP's open draft (the newest draft that is not ``running``), if any."""
    drafts = [v for v in versions if v.status is Status.DRAFT and v.version != running.version]
    return drafts[-1] if drafts else None


def _blocks(version: SopVersion) -> bool:
    """Whether a retired ``version`` keeps its steps from being proposed again: one that was
    rolled back or retired does; a draft superseded by the next proposal does not."""
    last = version.change_log[-1] if version.change_log else None
    return version.status is Status.DEPRECATED and not (last and last.by == SUPERSEDED)


async def propose(
    store: SopStore,
    current: SopVersion,
    evidence: Evidence,
    reviser: Reviser,
    *,
    source: str = "",
    auto_publish: bool = False,
    reviewers: Sequence[str] = (),
) -> Revision | None:
    """The version after ``current`` (the version the run ran on) from ``evidence``.

    See the module docstring for the open draft. The proposal is a draft awaiting
    ``reviewers``, or is published at once with ``auto_publish``. Conflicts come back on
    the revision even when nothing changes; None when there is nothing to say.
    """
    language = evidence.language
    versions = await store.versions(current.sop_id)
    draft = open_draft(versions, current)
    base = draft or current
    proposal = await reviser(base, evidence)
    ops = proposal.ops
    if not ops:
        if proposal.conflicts:
            return Revision(base, [], False, proposal.by, conflicts=proposal.conflicts)
        return None
    steps = apply_edits(base.steps, ops)
    retired = next((v for v in versions if _blocks(v) and v.steps == steps), None)
    if retired is not None and not proposal.disputed:
        # A rolled-back or retired version is not brought back by the requests that made it.
        why = retired.change_log[-1].why if retired.change_log else "deprecated"
        note = NOT_AGAIN(language, ref=retired.ref, why=why)
        return Revision(base, [], False, proposal.by, conflicts=[*proposal.conflicts, note])
    same = next(
        (v for v in versions if v.status is not Status.DEPRECATED and v.steps == steps), None
    )
    if same is not None and same.ref == base.ref:
        return Revision(base, [], False, proposal.by, conflicts=proposal.conflicts)
    if same is not None:
        notes: list[str] = []
        if draft is not None:  # the runs no longer ask for the open draft's steps
            why = WITHDRAWN_WHY(language, ref=same.ref)
            await store.deprecate(draft.sop_id, draft.version, why, by=SUPERSEDED)
            notes.append(WITHDRAWN(language, old=draft.ref, ref=same.ref))
        revision = await _reselect(store, current, same, ops, proposal, auto_publish, language)
        return replace(revision, supersedes=draft.ref if draft else None, notes=notes)
    return await _new_draft(
        store, current, base, draft, ops, proposal, source, auto_publish, reviewers, language
    )


async def _new_draft(
    store: SopStore,
    current: SopVersion,
    base: SopVersion,
    draft: SopVersion | None,
    ops: list[EditOp],
    proposal: Proposal,
    source: str,
    auto_publish: bool,
    reviewers: Sequence[str],
    language: str,
) -> Revision:
    sop_id = current.sop_id
    version = await store.next_version(sop_id)
    entry = ChangeLogEntry(version, revision_reason(ops, language), by=proposal.by, source=source)
    made = replace(
        base,
        version=version,
        steps=apply_edits(base.steps, ops),
        status=Status.DRAFT,
        change_log=(*base.change_log, entry),
        approvals=(),  # approvals are of the steps someone read: they never carry over
        created_at=utc_now(),
    )
    stored = await store.add_version(made)
    notes: list[str] = []
    # Drafts from before the one-draft rule, or extracted beside the open one, retire too.
    keep = {version, current.version, draft.version if draft else version}
    for older in await store.versions(sop_id):
        if older.status is Status.DRAFT and older.version not in keep:
            why = ALSO_RETIRED(language, new=stored.ref, sop_id=sop_id,
                               old=older.version, number=version)  # fmt: skip
            await store.deprecate(sop_id, older.version, why, by=SUPERSEDED)
    if draft is not None:
        why = SUPERSEDED_WHY(language, new=stored.ref)
        await store.deprecate(sop_id, draft.version, why, by=SUPERSEDED)
        notes.append(REPLACES(language, new=stored.ref, old=draft.ref))
        if draft.approvals:
            people = ", ".join(dict.fromkeys(a.reviewer for a in draft.approvals))
            notes.append(APPROVE_AGAIN(language, old=draft.ref, people=people, new=stored.ref))
    if auto_publish:
        stored = await store.publish(sop_id, version)
        await store.record_replacement(current.ref, stored.ref)
    else:  # who must approve it before `sop publish` (review.py)
        await store.request_review(sop_id, version, reviewers)
    return Revision(
        stored,
        ops,
        published=auto_publish,
        by=proposal.by,
        conflicts=proposal.conflicts,
        supersedes=draft.ref if draft else None,
        notes=notes,
    )


async def _reselect(
    store: SopStore,
    current: SopVersion,
    same: SopVersion,
    ops: list[EditOp],
    proposal: Proposal,
    auto_publish: bool,
    language: str,
) -> Revision:
    # The runs ask to go back to (or on to) a version that exists: choose it again. With
    # the auto-publish policy a version whose changes the runs undo (going *back*) is
    # retired, as scores alone could keep it (both may have one corrected run); going on
    # to a newer version leaves the older one to the scores and trials. Without the
    # policy reviewers decide.
    if auto_publish:
        if same.status == Status.DRAFT:
            same = await store.publish(same.sop_id, same.version)
        if current.status == Status.PUBLISHED and same.version < current.version:
            why = ASKED_AGAIN(language, ref=same.ref, reason=revision_reason(ops, language))
            await store.deprecate(current.sop_id, current.version, why, by="feedback")
    if same.ref != current.ref:
        await store.record_replacement(current.ref, same.ref)
    return Revision(
        same,
        ops,
        published=same.status == Status.PUBLISHED,
        by=proposal.by,
        conflicts=proposal.conflicts,
        reselected=True,
    )


__all__ = ["SUPERSEDED", "Revision", "open_draft", "propose"]
