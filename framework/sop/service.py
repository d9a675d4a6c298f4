"""The SOP library as rooms use it: best version, explanations, and feedback from outcomes.

Composes the store (persistence), scoring (which version wins, and why) and the reviser
(outcomes -> edit operations -> a new version). One path applies edits, whether they came from
the rule-based reviser (offline) or a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from framework.errors import InputError, UnknownNameError
from framework.sessions.events import utc_now
from framework.sop import trial_flow
from framework.sop.edits import EditOp, apply_edits
from framework.sop.library_io import import_library
from framework.sop.model import ChangeLogEntry, Outcome, SopVersion, Status
from framework.sop.model_reviser import Evidence, Proposal, Reviser, rule_reviser
from framework.sop.ref import SopRef
from framework.sop.reviser import revision_reason
from framework.sop.scoring import (
    Candidate,
    Choice,
    ScoringPolicy,
    auto_deprecate,
    choose_best,
)
from framework.sop.store import SopStore
from framework.sop.trials import Assignment, TrialPolicy, Verdict
from framework.specs.limits import MAX_TEXT_CHARS
from framework.specs.scenario import ScenarioSettings
from framework.specs.sop_card import render_steps


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


class SopService:
    """Best-version selection and the outcome -> revision loop over one store."""

    def __init__(self, store: SopStore, policy: ScoringPolicy | None = None) -> None:
        self.store = store
        self.policy = policy or ScoringPolicy()
        self.library_problems: dict[str, InputError] = {}
        """SOP id -> why a card of it in ``sop_library/`` was not imported. A room that uses
        that SOP raises it; everything else runs (one broken card stops only its users)."""

    @classmethod
    async def open(cls, path: Path, library: Path | None = None) -> SopService:
        """Open the store at ``path`` and import the SOP cards under ``library`` (idempotent)."""
        store = await SopStore.open(path)
        problems: dict[str, InputError] = {}
        if library is not None and library.is_dir():
            try:
                problems = (await import_library(store, library, strict=False)).problems
            except BaseException:
                await store.close()  # else its worker thread keeps the process alive
                raise
        service = cls(store)
        service.library_problems = problems
        return service

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()

    async def candidates(self, sop_id: str) -> list[Candidate]:
        """Every version of ``sop_id`` with its metrics."""
        return [
            Candidate(v, await self.store.metrics(v.ref)) for v in await self.store.versions(sop_id)
        ]

    async def choose(self, sop_id: str, *, trials: bool = True) -> Choice:
        """The scored choice among ``sop_id``'s versions (see ``staffroom sop explain``).

        A version on trial cannot win while another published version can (``trials=False``:
        it competes by score like any other)."""
        held = await trial_flow.on_trial(self.store, sop_id) if trials else {}
        now = datetime.now(UTC)
        return choose_best(
            await self.candidates(sop_id), now=now, policy=self.policy, on_trial=held
        )

    async def best(self, sop_id: str) -> SopVersion:
        """The best published version of ``sop_id``."""
        choice = await self.choose(sop_id)
        if choice.winner is None:
            raise UnknownNameError(
                f"SOP '{sop_id}' has no published version",
                field="sop",
                fix=f"publish one: staffroom sop publish {sop_id} VERSION",
            )
        return choice.winner.version

    async def recommendations(self, scope: str, *, exclude: Sequence[str] = ()) -> str:
        """Published SOPs in ``scope`` (``employee:<id>`` or ``scenario:<id>``) as text.

        Shown (and injected into prompts) at the start of a DM with that employee, or of a
        room of that scenario: one user's proven practice, published after review, helps
        the next user from the first message on. ``exclude``: SOPs already driving the room.
        """
        blocks = []
        for sop_id in await self.store.for_scope(scope):
            if sop_id in exclude:
                continue
            choice = await self.choose(sop_id)
            if choice.winner is not None:
                v = choice.winner.version
                blocks.append(render_steps(v.ref, v.goal, v.steps))
        if not blocks:
            return ""
        head = "推荐做法 / Recommended practice (published SOPs):"
        # Sent in every prompt: whole SOPs up to the text cap, then a pointer to the rest.
        kept: list[str] = []
        for block in blocks:
            if len(head) + sum(len(b) + 2 for b in [*kept, block]) > MAX_TEXT_CHARS - 100:
                kept.append(f"… {len(blocks) - len(kept)} more: staffroom sop list")
                break
            kept.append(block)
        return head + "\n" + "\n\n".join(kept)

    async def sink(self, sop_id: str) -> list[tuple[SopVersion, str]]:
        """Deprecate published versions whose outcomes fell below the policy's threshold.

        Never the only published version; the reason is written to the change log.
        """
        sunk = auto_deprecate(await self.candidates(sop_id), policy=self.policy)
        for version, reason in sunk:
            await self.store.deprecate(version.sop_id, version.version, reason, by="auto")
        return sunk

    # Reviews and trials: the rules are framework/sop/review.py and framework/sop/trials.py.

    async def publish(
        self, sop_id: str, version: int, *, required: Sequence[str] = (), by: str | None = None
    ) -> SopVersion:
        """Publish a draft people reviewed (``staffroom sop publish``): every reviewer recorded
        when it was proposed and every one in ``required`` must have approved it, and with
        nobody named one approval by anyone. Over a published version it starts a trial.
        ``by``: who publishes it (recorded in the change_log)."""
        return await self.store.publish(
            sop_id, version, required_reviewers=required, need_approval=True, by=by
        )

    async def judge_trials(self, sop_id: str, policy: TrialPolicy | None = None) -> Verdict | None:
        """Judge ``sop_id``'s open trial once both sides ran ``policy.runs`` times since it
        began: roll the trial version back, or make it the best (see :mod:`.trial_flow`)."""
        choice = await self.choose(sop_id)
        return await trial_flow.judge_open(self.store, sop_id, choice, policy or TrialPolicy())

    async def for_room(
        self, sop_id: str, room: str, policy: TrialPolicy | None = None
    ) -> Assignment:
        """The version the new room ``room`` (its session key) runs on: the best or, while a
        trial runs, the trial version for ``policy.share`` of rooms (by a hash of ``room``:
        the same room always gets the same side). The open trial is judged first. Share 0:
        trials off, neither assigned nor judged; the best by score over every published
        version, as before trials."""
        policy = policy or TrialPolicy()
        if policy.share <= 0:
            winner = (await self.choose(sop_id, trials=False)).winner
            return Assignment(winner.version if winner else await self.best(sop_id))
        await self.judge_trials(sop_id, policy)
        choice = await self.choose(sop_id)
        trial = await trial_flow.assign(self.store, sop_id, room, choice, policy)
        return trial or Assignment(await self.best(sop_id))

    async def explain(self, sop_id: str, policy: TrialPolicy | None = None) -> list[str]:
        """``staffroom sop explain``: every candidate's score, then the trials and verdicts."""
        choice = await self.choose(sop_id)
        policy = policy or TrialPolicy()
        return [*choice.explain(), *await trial_flow.explain(self.store, sop_id, choice, policy)]

    async def for_new_room(
        self, sop_ids: Sequence[str], room: str, settings: ScenarioSettings
    ) -> tuple[dict[str, SopVersion], dict[str, dict[str, str | float]]]:
        """:meth:`for_room` for each SOP a new room's scenario names, with its trial settings:
        the versions by SOP id (an SOP with no published version is left out), and the trials
        the room takes part in (what its entry event records)."""
        policy = TrialPolicy(settings.sop_trial_share, settings.sop_trial_runs)
        versions: dict[str, SopVersion] = {}
        trials: dict[str, dict[str, str | float]] = {}
        for sop_id in sop_ids:
            with suppress(UnknownNameError):
                got = await self.for_room(sop_id, room, policy)
                versions[sop_id] = got.version
                if (record := got.record()) is not None:
                    trials[sop_id] = record
        return versions, trials

    async def record_run(
        self,
        outcome: Outcome,
        *,
        feedback: bool = True,
        auto_publish: bool = False,
        reviewers: Sequence[str] = (),
        reviser: Reviser = rule_reviser,
        threshold: int = 1,
        amend: bool = False,
    ) -> Revision | None:
        """Store a run's outcome against its version and, with ``feedback``, propose the next
        (see :meth:`revise`). With ``amend`` the stored outcome of the same run (ref, session
        and ``at``) is replaced: feedback that came after the run closed."""
        await self.store.record_outcome(outcome, amend=amend)
        return await self._after_outcome(
            outcome, feedback, auto_publish, reviewers, reviser, threshold
        )

    async def _after_outcome(
        self,
        outcome: Outcome,
        feedback: bool,
        auto_publish: bool,
        reviewers: Sequence[str],
        reviser: Reviser,
        threshold: int,
    ) -> Revision | None:
        ref = SopRef.parse(outcome.sop_ref, field="sop_ref", require_version=True)
        await self.sink(ref.sop_id)
        if not feedback:
            return None
        current = await self.store.get(ref.sop_id, ref.version)
        return await self.revise(
            current,
            source=outcome.session,
            auto_publish=auto_publish,
            reviewers=reviewers,
            reviser=reviser,
            threshold=threshold,
        )

    async def evidence(self, sop_id: str, *, threshold: int = 1) -> Evidence:
        """Every run of ``sop_id`` (oldest first) with the steps each version had."""
        versions = await self.store.versions(sop_id)
        outcomes = [o for v in versions for o in await self.store.outcomes(v.ref)]
        outcomes.sort(key=lambda o: o.at)
        steps_of = {v.ref: v.steps for v in versions}
        return Evidence(outcomes, steps_of, threshold)

    async def conflicts(self, sop_id: str, *, threshold: int = 1) -> list[str]:
        """What the runs of ``sop_id`` ask that the rules leave for reviewers, read against its
        best version: opposing requests with equal support, removals others rely on."""
        best = await self.best(sop_id)
        proposal = await rule_reviser(best, await self.evidence(sop_id, threshold=threshold))
        return proposal.conflicts

    async def revise(
        self,
        current: SopVersion,
        *,
        source: str = "",
        auto_publish: bool = False,
        reviewers: Sequence[str] = (),
        reviser: Reviser = rule_reviser,
        threshold: int = 1,
    ) -> Revision | None:
        """Propose the version after ``current`` from what every run of the SOP asks for.

        Corrections are weighed over all versions' runs (``threshold`` runs must ask, more
        than ask the opposite; :mod:`framework.sop.claims`). The proposal is a draft awaiting
        ``reviewers``, or is published at once when ``auto_publish`` (the scenario's policy)
        says so. A proposal whose steps equal an existing version's *re-selects* that version
        (published again if it is a draft and ``auto_publish``; recorded as replacing
        ``current``) instead of vanishing. The change log's ``by`` says who proposed the edits
        (``model:<label>``, or ``rules`` and why the model's edits were not used). Conflicts
        come back on the revision even when nothing changes.
        """
        sop_id = current.sop_id
        evidence = await self.evidence(sop_id, threshold=threshold)
        proposal = await reviser(current, evidence)
        ops = proposal.ops
        if not ops:
            if proposal.conflicts:
                return Revision(current, [], False, proposal.by, conflicts=proposal.conflicts)
            return None
        steps = apply_edits(current.steps, ops)
        versions = await self.store.versions(sop_id)
        retired = next(
            (v for v in versions if v.status == Status.DEPRECATED and v.steps == steps), None
        )
        if retired is not None:
            # A rolled-back or retired version is not brought back by the requests that made it.
            why = retired.change_log[-1].why if retired.change_log else "deprecated"
            note = f"not proposed again: the runs ask for the steps of {retired.ref} ({why})"
            return Revision(current, [], False, proposal.by, conflicts=[*proposal.conflicts, note])
        existing = [v for v in versions if v.status != Status.DEPRECATED]
        same = next((v for v in existing if v.steps == steps), None)
        if same is not None and same.ref == current.ref:
            return Revision(current, [], False, proposal.by, conflicts=proposal.conflicts)
        if same is not None:
            return await self._reselect(current, same, ops, proposal, auto_publish)
        version = await self.store.next_version(sop_id)
        entry = ChangeLogEntry(version, revision_reason(ops), by=proposal.by, source=source)
        draft = replace(
            current,
            version=version,
            steps=steps,
            status=Status.DRAFT,
            change_log=(*current.change_log, entry),
            approvals=(),
            created_at=utc_now(),
        )
        stored = await self.store.add_version(draft)
        if not auto_publish:  # who must approve it before `sop publish` (review.py)
            await self.store.request_review(sop_id, version, reviewers)
        if auto_publish:
            stored = await self.store.publish(sop_id, version)
            await self.store.record_replacement(current.ref, stored.ref)
        return Revision(
            stored, ops, published=auto_publish, by=proposal.by, conflicts=proposal.conflicts
        )

    async def _reselect(
        self,
        current: SopVersion,
        same: SopVersion,
        ops: list[EditOp],
        proposal: Proposal,
        auto_publish: bool,
    ) -> Revision:
        # The runs ask to go back to (or on to) a version that exists: choose it again. With
        # the auto-publish policy a version whose changes the runs undo (going *back*) is
        # retired, as scores alone could keep it (both may have one corrected run); going on
        # to a newer version leaves the older one to the scores and trials. Without the
        # policy reviewers decide.
        if auto_publish:
            if same.status == Status.DRAFT:
                same = await self.store.publish(same.sop_id, same.version)
            if current.status == Status.PUBLISHED and same.version < current.version:
                why = f"the runs ask for the steps of {same.ref} again: {revision_reason(ops)}"
                await self.store.deprecate(current.sop_id, current.version, why, by="feedback")
        await self.store.record_replacement(current.ref, same.ref)
        return Revision(
            same,
            ops,
            published=same.status == Status.PUBLISHED,
            by=proposal.by,
            conflicts=proposal.conflicts,
            reselected=True,
        )


def ensure_known(sop_id: str, ids: Sequence[str]) -> None:
    """Raise a clear error when ``sop_id`` is not in the store."""
    if sop_id not in ids:
        raise UnknownNameError(
            f"unknown SOP '{sop_id}'",
            field="sop",
            fix=f"known SOPs: {', '.join(ids) or 'none'} (import cards with: staffroom sop import)",
        )
