"""Trials over the store: which versions are on trial, judging the open one, assigning rooms.

The decisions are :mod:`framework.sop.trials`' (pure); this module reads what they need from
the store and writes their results back (:meth:`SopStore.end_trial`: one transaction).
:class:`~framework.sop.service.SopService` calls these with its scored choice, whose winner
is the best *not on trial*: the version a trial is compared with.
"""

from __future__ import annotations

from framework.sop.model import Status
from framework.sop.scoring import Choice
from framework.sop.store import SopStore
from framework.sop.trials import (
    ENDED,
    PROMOTED,
    ROLLED_BACK,
    Assignment,
    Record,
    Trial,
    TrialPolicy,
    Verdict,
    in_trial,
    judge,
    status_line,
)


async def open_trial(store: SopStore, sop_id: str) -> Trial | None:
    """The trial of ``sop_id`` that is running, if any (there is at most one)."""
    return next((t for t in await store.trials(sop_id) if t.open), None)


async def on_trial(store: SopStore, sop_id: str) -> dict[int, str]:
    """Version number -> why it cannot win yet, for :func:`~framework.sop.scoring.choose_best`."""
    trial = await open_trial(store, sop_id)
    if trial is None:
        return {}
    return {trial.version: f"on trial since {trial.started_at}, in a share of rooms"}


async def records(store: SopStore, trial: Trial, best_ref: str) -> tuple[Record, Record]:
    """How the trial version and the best did in the runs since the trial began."""
    mine = Record.since(await store.outcomes(trial.ref), trial.started_at)
    theirs = Record.since(await store.outcomes(best_ref), trial.started_at)
    return mine, theirs


async def judge_open(
    store: SopStore, sop_id: str, choice: Choice, policy: TrialPolicy
) -> Verdict | None:
    """Judge the open trial against ``choice``'s winner and act on the verdict.

    Lost: the trial version is deprecated with the comparison as the reason (the best keeps
    serving). Won (as well or better): the best it beat is deprecated, saying by which
    version and why, so the trial version is the best from now on. A trial whose version was
    retired meanwhile ends unjudged; one with nothing left to be compared with is promoted.
    None while the trial waits for runs, or when none runs.
    """
    trial = await open_trial(store, sop_id)
    if trial is None:
        return None
    version = await store.get(sop_id, trial.version)
    if version.status is not Status.PUBLISHED:
        await store.end_trial(trial, ENDED, f"{trial.ref} was {version.status} during the trial")
        return None
    if choice.winner is None or choice.winner.version.ref == trial.ref:
        reason = f"{trial.ref} has no other published version to be compared with"
        await store.end_trial(trial, PROMOTED, reason)
        return Verdict(True, reason)
    best = choice.winner.version
    mine, theirs = await records(store, trial, best.ref)
    verdict = judge(mine, theirs, trial_ref=trial.ref, best_ref=best.ref, runs=policy.runs)
    if verdict is None:
        return None
    if verdict.promote:
        why = f"superseded by {trial.ref}, which {verdict.reason}"
        await store.end_trial(trial, PROMOTED, verdict.reason, retire=best.version, why=why)
    else:
        await store.end_trial(
            trial, ROLLED_BACK, verdict.reason, retire=trial.version, why=verdict.reason
        )
    return verdict


async def assign(
    store: SopStore, sop_id: str, room: str, choice: Choice, policy: TrialPolicy
) -> Assignment | None:
    """The side of the open trial the room ``room`` (its session key) is on; None when no
    trial runs (the room gets ``choice``'s winner)."""
    trial = await open_trial(store, sop_id)
    if trial is None or choice.winner is None or choice.winner.version.ref == trial.ref:
        return None
    best = choice.winner.version
    chosen = best
    if in_trial(trial.ref, room, policy.share):
        chosen = await store.get(sop_id, trial.version)
    return Assignment(chosen, trial=trial.ref, best=best.ref, share=policy.share)


async def explain(store: SopStore, sop_id: str, choice: Choice, policy: TrialPolicy) -> list[str]:
    """Lines for ``staffroom sop explain``: the running trial, then every ended one's verdict."""
    lines: list[str] = []
    for trial in await store.trials(sop_id):
        if trial.open:
            best = choice.winner.version.ref if choice.winner else None
            if best == trial.ref:
                best = None
            mine, theirs = await records(store, trial, best) if best else (Record(), Record())
            lines.append(status_line(trial, best, mine, theirs, policy.runs))
        else:
            lines.append(f"trial: {trial.ref} {trial.verdict} at {trial.ended_at}: {trial.reason}")
    return lines


__all__ = ["assign", "explain", "judge_open", "on_trial", "open_trial", "records"]
