"""Trials: a version published over the best runs beside it for a share of rooms, then is judged.

Pure decisions, no I/O: which rooms get the trial version (:func:`in_trial`), how each side
did since the trial began (:class:`Record`), and the verdict (:func:`judge`). The store keeps
the trials (``trials`` table) and :class:`~framework.sop.service.SopService` acts on verdicts.

- Assignment: a hash of the trial's ref and the room's session key, so a room always gets the
  same side (a resumed room, a replay, a second process) and no counter is shared.
- Judgement: once both sides have ``runs`` runs since the trial began, the trial loses if its
  success rate is lower than the best's, or equal with more corrections per run; otherwise
  (as well or better) it wins. Rates are compared as exact fractions: no float noise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from framework.phrases import Phrase
from framework.sop.model import Outcome, SopVersion

PROMOTED = "promoted"
ROLLED_BACK = "rolled back"
ENDED = "ended"
"""Verdicts: the trial won, lost, or stopped unjudged (its version was retired or replaced)."""


@dataclass(frozen=True, slots=True)
class TrialPolicy:
    """How trials run in a scenario's rooms (``sop_trial_share``, ``sop_trial_runs``)."""

    share: float = 0.5
    """Share of new rooms that get the trial version; 0 turns trials off for the room (it gets
    the best by score over every published version, the trial version included)."""
    runs: int = 3
    """Runs each side needs since the trial began before it is judged."""


@dataclass(frozen=True, slots=True)
class Trial:
    """A version on trial against the best, as the store keeps it."""

    sop_id: str
    version: int
    started_at: str
    ended_at: str | None = None
    verdict: str | None = None
    """:data:`PROMOTED`, :data:`ROLLED_BACK` or :data:`ENDED`; None while it runs."""
    reason: str | None = None

    @property
    def ref(self) -> str:
        """``id@version`` of the version on trial."""
        return f"{self.sop_id}@{self.version}"

    @property
    def open(self) -> bool:
        """True while the trial runs."""
        return self.ended_at is None


@dataclass(frozen=True, slots=True)
class Record:
    """How one side of a trial did in the runs since the trial began."""

    runs: int = 0
    successes: int = 0
    corrections: int = 0

    @classmethod
    def since(cls, outcomes: Iterable[Outcome], started_at: str) -> Record:
        """The record of ``outcomes`` stored at or after ``started_at`` (ISO UTC text)."""
        kept = [o for o in outcomes if o.at >= started_at]
        return cls(
            runs=len(kept),
            successes=sum(o.success for o in kept),
            corrections=sum(len(o.corrections) for o in kept),
        )

    def text(self) -> str:
        """``success 2/3, 0.3 corrections per run``."""
        per_run = self.corrections / self.runs if self.runs else 0.0
        return f"success {self.successes}/{self.runs}, {per_run:.1f} corrections per run"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judgement of a trial: whether the trial version becomes the best, and why."""

    promote: bool
    reason: str


def in_trial(trial_ref: str, room: str, share: float) -> bool:
    """True if the room with session key ``room`` gets the trial version ``trial_ref``.

    Deterministic (sha256 of both), so the same room always lands on the same side; the
    trial's ref is hashed too, so each trial draws a different set of rooms.
    """
    digest = hashlib.sha256(f"{trial_ref}\n{room}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def judge(
    trial: Record, best: Record, *, trial_ref: str, best_ref: str, runs: int
) -> Verdict | None:
    """The verdict once both sides have ``runs`` runs; None while either has fewer."""
    if trial.runs < max(runs, 1) or best.runs < max(runs, 1):
        return None
    # a/b < c/d  <=>  a*d < c*b for positive run counts: exact, no float ties.
    success = trial.successes * best.runs - best.successes * trial.runs
    corrections = trial.corrections * best.runs - best.corrections * trial.runs
    worse = success < 0 or (success == 0 and corrections > 0)
    compared = f"{trial_ref} {trial.text()} vs {best_ref} {best.text()}"
    if worse:
        return Verdict(False, f"rolled back after a trial against {best_ref}: {compared}")
    return Verdict(True, f"won a trial against {best_ref}: {compared}")


@dataclass(frozen=True, slots=True)
class Assignment:
    """The version a room runs on, and the trial it took part in (if one was running)."""

    version: SopVersion
    trial: str | None = None
    """The ref of the version on trial, when a trial runs; None otherwise."""
    best: str | None = None
    """The ref of the best it is tried against, when a trial runs."""
    share: float = 0.0

    @property
    def arm(self) -> Literal["trial", "best"] | None:
        """Which side of the running trial the room is on (None: no trial)."""
        if self.trial is None:
            return None
        return "trial" if self.version.ref == self.trial else "best"

    def record(self) -> dict[str, str | float] | None:
        """What the room's entry event records about the trial (None: no trial ran)."""
        if self.trial is None or self.best is None or self.arm is None:
            return None
        return {"arm": self.arm, "trial": self.trial, "best": self.best, "share": self.share}


TRIAL_STARTS = Phrase(
    en="{ref} is published on trial: about {share} of new rooms{where} run it, the others run "
    "{best} (the best now), until each has run {runs} times; then the better one serves every "
    "room (staffroom sop explain {sop_id}). Rooms already open keep their version.",
    zh="{ref} 已发布并进入试用：{where}约 {share} 的新房间运行它，其余运行 {best}（当前最佳），"
    "直到双方各运行 {runs} 次；之后表现更好的版本服务所有房间（staffroom sop explain {sop_id}）。"
    "已开启的房间保持原版本。",
)
TRIALS_OFF = Phrase(
    en="{scenario} has trials off (sop_trial_share: 0): its new rooms run the best by score, "
    "now {winner}",
    zh="{scenario} 关闭了试用（sop_trial_share: 0）：它的新房间运行得分最高的版本，目前是 {winner}",
)
IN_SCENARIO = Phrase(
    en=" of {scenario}",
    zh="{scenario} 的",
)
SERVES_ALL = Phrase(
    en="{ref} is published: it is the only published version, so every new room runs it",
    zh="{ref} 已发布：它是唯一已发布的版本，所有新房间都运行它",
)


@dataclass(frozen=True, slots=True)
class ScenarioTrials:
    """One scenario's trial settings, for what ``sop publish`` says (None: no scenario)."""

    scenario: str | None
    policy: TrialPolicy


def publish_lines(
    ref: str,
    sop_id: str,
    trial: Trial | None,
    best: str | None,
    winners: Mapping[float, str | None],
    settings: Iterable[ScenarioTrials],
    language: str = "en",
) -> list[str]:
    """What ``sop publish`` tells people about the version ``ref`` it published: which rooms
    run it from now on. ``trial``: the open trial (if any); ``best``: the version it is tried
    against; ``winners``: share 0 -> the best by score over every published version (the
    version rooms with trials off get)."""
    if trial is None or trial.ref != ref or best is None:
        return [SERVES_ALL(language, ref=ref)]
    lines = []
    for s in settings:
        where = IN_SCENARIO(language, scenario=s.scenario) if s.scenario else ""
        if s.policy.share <= 0:
            winner = winners.get(0.0) or best
            lines.append(TRIALS_OFF(language, scenario=s.scenario or "-", winner=winner))
            continue
        share = f"{s.policy.share:.0%}"
        lines.append(
            TRIAL_STARTS(
                language,
                ref=ref,
                share=share,
                where=where,
                best=best,
                runs=s.policy.runs,
                sop_id=sop_id,
            )
        )
    return lines


def runs_trial(trials: Mapping[str, Mapping[str, object]], ref: str | None) -> bool:
    """Whether the room whose entry recorded ``trials`` (SOP id -> :meth:`Assignment.record`)
    runs ``ref`` as a version on trial (not the best it is tried against)."""
    return ref is not None and any(t.get("trial") == ref for t in trials.values())


def status_line(trial: Trial, best_ref: str | None, t: Record, b: Record, runs: int) -> str:
    """One line for ``staffroom sop explain`` about a running trial."""
    if best_ref is None:
        return f"trial: {trial.ref} has no other published version to be compared with"
    return (
        f"trial: {trial.ref} against {best_ref} since {trial.started_at}: "
        f"{trial.ref} {t.text()}; {best_ref} {b.text()}; judged when both have {runs} runs"
    )


__all__ = [
    "ENDED",
    "PROMOTED",
    "ROLLED_BACK",
    "Assignment",
    "Record",
    "ScenarioTrials",
    "Trial",
    "TrialPolicy",
    "Verdict",
    "in_trial",
    "judge",
    "publish_lines",
    "runs_trial",
    "status_line",
]
