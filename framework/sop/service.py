"""The SOP library as rooms use it: best version, explanations, and feedback from outcomes.

Composes the store (persistence), scoring (which version wins, and why) and the reviser
(outcomes -> edit operations -> a new version). One path applies edits, whether they came from
the rule-based reviser (offline) or a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path

from framework.errors import InputError, UnknownNameError
from framework.sop import trial_flow
from framework.sop.library_io import import_library
from framework.sop.model import Outcome, SopVersion
from framework.sop.proposals import Revision, propose
from framework.sop.ref import SopRef
from framework.sop.revisers import Evidence, Reviser, rule_reviser
from framework.sop.scoring import (
    Candidate,
    Choice,
    ScoringPolicy,
    auto_deprecate,
    choose_best,
)
from framework.sop.store import SopStore
from framework.sop.trials import (
    Assignment,
    ScenarioTrials,
    TrialPolicy,
    Verdict,
    publish_lines,
)
from framework.specs.limits import MAX_TEXT_CHARS
from framework.specs.scenario import ScenarioSettings
from framework.specs.sop_card import render_steps


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
        return await cls.on_store(await SopStore.open(path), library)

    @classmethod
    async def on_store(cls, store: SopStore, library: Path | None = None) -> SopService:
        """The service over an open ``store`` (``SopStore.open_database`` for the one
        replicas share), the SOP cards under ``library`` imported first (idempotent)."""
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

    async def who_runs(
        self, version: SopVersion, scenarios: Sequence[ScenarioTrials], language: str = "en"
    ) -> list[str]:
        """What ``sop publish`` says about the just-published ``version``: whether it starts a
        trial, and for which share of the new rooms of each scenario in ``scenarios`` (their
        trial settings) until when (:func:`~framework.sop.trials.publish_lines`)."""
        trial = await trial_flow.open_trial(self.store, version.sop_id)
        winner = (await self.choose(version.sop_id)).winner
        by_score = (await self.choose(version.sop_id, trials=False)).winner
        return publish_lines(
            version.ref,
            version.sop_id,
            trial,
            winner.version.ref if winner else None,
            {0.0: by_score.version.ref if by_score else None},
            scenarios or [ScenarioTrials(None, TrialPolicy())],
            language,
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
        self,
        sop_ids: Sequence[str],
        room: str,
        settings: ScenarioSettings,
        *,
        library: Path | None = None,
    ) -> tuple[dict[str, SopVersion], dict[str, dict[str, str | float]]]:
        """:meth:`for_room` for each SOP a new room's scenario names, with its trial settings:
        the versions by SOP id (an SOP with no published version is left out), and the trials
        the room takes part in (what its entry event records).

        ``library``: a user project's own SOP cards, imported first. An SOP whose card is
        broken (there, or in the library imported on open) raises its card's error: a room
        never runs on a stale version."""
        problems = dict(self.library_problems)
        if library is not None:
            problems.update((await import_library(self.store, library, strict=False)).problems)
        for sop_id in sop_ids:
            if (problem := problems.get(sop_id)) is not None:
                raise problem.with_traceback(None)
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
        language: str = "en",
    ) -> Revision | None:
        """Store a run's outcome against its version and, with ``feedback``, propose the next
        (see :meth:`revise`). With ``amend`` the stored outcome of the same run (ref, session
        and ``at``) is replaced: feedback that came after the run closed."""
        await self.store.record_outcome(outcome, amend=amend)
        return await self._after_outcome(
            outcome, feedback, auto_publish, reviewers, reviser, threshold, language
        )

    async def _after_outcome(
        self,
        outcome: Outcome,
        feedback: bool,
        auto_publish: bool,
        reviewers: Sequence[str],
        reviser: Reviser,
        threshold: int,
        language: str,
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
            language=language,
        )

    async def evidence(self, sop_id: str, *, threshold: int = 1, language: str = "en") -> Evidence:
        """Every run of ``sop_id`` (oldest first) with the steps each version had."""
        versions = await self.store.versions(sop_id)
        outcomes = [o for v in versions for o in await self.store.outcomes(v.ref)]
        outcomes.sort(key=lambda o: o.at)
        steps_of = {v.ref: v.steps for v in versions}
        return Evidence(outcomes, steps_of, threshold, language)

    async def conflicts(
        self, sop_id: str, *, threshold: int = 1, language: str = "en"
    ) -> list[str]:
        """What the runs of ``sop_id`` ask that the rules leave for reviewers, read against its
        best version: opposing requests with equal support, removals others rely on, one step
        added in two places, order requests in a circle."""
        best = await self.best(sop_id)
        evidence = await self.evidence(sop_id, threshold=threshold, language=language)
        return (await rule_reviser(best, evidence)).conflicts

    async def revise(
        self,
        current: SopVersion,
        *,
        source: str = "",
        auto_publish: bool = False,
        reviewers: Sequence[str] = (),
        reviser: Reviser = rule_reviser,
        threshold: int = 1,
        language: str = "en",
    ) -> Revision | None:
        """Propose the version after ``current`` from what every run of the SOP asks for.

        Corrections are weighed over all versions' runs (``threshold`` runs must ask, more
        than ask the opposite; :mod:`framework.sop.claims`). The proposal builds on the open
        draft if there is one and retires it (:mod:`framework.sop.proposals`: at most one
        open draft per SOP); it is a draft awaiting ``reviewers``, or is published at once
        when ``auto_publish`` (the scenario's policy) says so. A proposal whose steps equal an
        existing version's *re-selects* that version. The change log's ``by`` says who
        proposed the edits (``model:<label>``, or ``rules`` and why the model's edits were
        not used). Conflicts come back on the revision even when nothing changes; reasons and
        conflicts are written in ``language``.
        """
        evidence = await self.evidence(current.sop_id, threshold=threshold, language=language)
        return await propose(
            self.store,
            current,
            evidence,
            reviser,
            source=source,
            auto_publish=auto_publish,
            reviewers=reviewers,
        )


def ensure_known(sop_id: str, ids: Sequence[str]) -> None:
    """Raise a clear error when ``sop_id`` is not in the store."""
    if sop_id not in ids:
        raise UnknownNameError(
            f"unknown SOP '{sop_id}'",
            field="sop",
            fix=f"known SOPs: {', '.join(ids) or 'none'} (import cards with: staffroom sop import)",
        )
