"""Best-version selection: a deterministic, explainable score over a version's run metrics.

``total = success - corrections + usage + recency + sink``, every term with a one-line
reason, so ``staffroom sop explain`` can print why a version won. Pure: no I/O, no clock
(``now`` is passed in), the same input always ranks the same way.

- success: Laplace-smoothed success rate, so one lucky run does not beat a long record and
  an untried version starts at the prior (0.5), not at 0 or 1.
- corrections: corrections per run times a weight; a version users keep correcting sinks.
- usage: ``log1p(runs)`` with a small weight: evidence counts, with diminishing returns, and
  a proven version beats an untried one only if its record is actually good.
- recency: a version idle longer than ``stale_days`` loses part of its positive score,
  halving every ``half_life_days``. A never-used version has no idle time: not penalised.
- sink: after ``min_runs_to_judge`` runs, a raw success rate below ``deprecate_below`` costs a
  flat penalty (and makes the version a candidate for :func:`auto_deprecate`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from framework.sop.model import SopVersion, Status, VersionMetrics


@dataclass(frozen=True, slots=True)
class ScoringPolicy:
    """The knobs of the score; the defaults suit SOPs run a few times a week."""

    prior_success: float = 0.5
    prior_weight: float = 2.0
    correction_weight: float = 0.2
    usage_weight: float = 0.03
    stale_days: float = 30.0
    half_life_days: float = 30.0
    deprecate_below: float = 0.3
    min_runs_to_judge: int = 5
    sink_penalty: float = 0.5


@dataclass(frozen=True, slots=True)
class Candidate:
    """A version and its aggregated run metrics."""

    version: SopVersion
    metrics: VersionMetrics


@dataclass(frozen=True, slots=True)
class Term:
    """One additive part of a score: its value, the quantity behind it, and why."""

    name: str
    value: float
    measure: float
    """The raw quantity compared in explanations (rate, corrections/run, runs, idle days)."""
    reason: str


@dataclass(frozen=True, slots=True)
class ScoreBreakdown:
    """A version's score: the total and each term with its reason."""

    total: float
    terms: tuple[Term, ...]
    ineligible: str | None = None
    """Why the version cannot win (draft, deprecated); None when it is eligible."""

    def term(self, name: str) -> Term:
        """The term called ``name`` (success, corrections, usage, recency, sink)."""
        return next(t for t in self.terms if t.name == name)

    def line(self) -> str:
        """``0.81 = success +0.83 (...); corrections -0.00 (...); ...``."""
        parts = "; ".join(f"{t.name} {t.value:+.2f} ({t.reason})" for t in self.terms)
        return f"{self.total:.2f} = {parts}"


def score(
    c: Candidate, *, now: datetime, policy: ScoringPolicy = ScoringPolicy()
) -> ScoreBreakdown:
    """Score one candidate (whatever its status; eligibility is :func:`choose_best`'s call)."""
    m, p = c.metrics, policy
    runs = max(m.runs, 0)
    smoothed = _smoothed(m, p)
    success = Term(
        "success",
        smoothed,
        smoothed,
        f"{m.successes}/{runs} runs succeeded, prior {p.prior_success:g}×{p.prior_weight:g}",
    )
    per_run = m.corrections / runs if runs else 0.0
    corrections = Term(
        "corrections",
        -p.correction_weight * per_run,
        per_run,
        f"{per_run:.1f} corrections per run, {m.corrections} in {runs}",
    )
    usage = Term(
        "usage",
        p.usage_weight * math.log1p(runs),
        float(runs),
        f"{runs} runs of evidence" if runs else "never run: no usage bonus",
    )
    base = success.value + corrections.value + usage.value
    terms = (success, corrections, usage, _recency(m, base, now, p), _sink(m, p))
    return ScoreBreakdown(total=sum(t.value for t in terms), terms=terms)


def _recency(m: VersionMetrics, base: float, now: datetime, p: ScoringPolicy) -> Term:
    last = _parse_time(m.last_used)
    if last is None:
        # Never used (or unknown): a freshly published version must get its chance.
        why = "never used: no decay" if not m.last_used else "last use unreadable: no decay"
        return Term("recency", 0.0, 0.0, why)
    idle = max((_aware(now) - last).total_seconds() / 86400.0, 0.0)
    if idle <= p.stale_days:
        return Term(
            "recency", 0.0, idle, f"used {idle:.0f} days ago, fresh within {p.stale_days:g}"
        )
    factor = 0.5 ** ((idle - p.stale_days) / p.half_life_days)
    # Decay only what is positive: decay must never *raise* an already negative score.
    value = -(1.0 - factor) * max(base, 0.0)
    why = f"idle {idle:.0f} days > {p.stale_days:g}: kept ×{factor:.2f}"
    why += f", half-life {p.half_life_days:g} days"
    return Term("recency", value, idle, why)


def _sink(m: VersionMetrics, p: ScoringPolicy) -> Term:
    if m.runs < p.min_runs_to_judge:
        return Term("sink", 0.0, 0.0, f"too few runs to judge ({m.runs} < {p.min_runs_to_judge})")
    rate = m.successes / m.runs
    if _sinks(m, p):
        why = f"success {rate:.0%} < {p.deprecate_below:.0%} after {m.runs} runs"
        return Term("sink", -p.sink_penalty, rate, why)
    return Term("sink", 0.0, rate, f"success {rate:.0%} ≥ {p.deprecate_below:.0%}: no sink")


def _parse_time(text: str) -> datetime | None:
    if not text:
        return None
    try:
        return _aware(datetime.fromisoformat(text))
    except ValueError:
        return None


def _aware(t: datetime) -> datetime:
    # Stored times are UTC ("...Z"); a naive time is read as UTC so the two can be compared.
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _sinks(m: VersionMetrics, p: ScoringPolicy) -> bool:
    return m.runs >= p.min_runs_to_judge and m.successes / m.runs < p.deprecate_below


# Phrases for the terms where the winner did better than the runner-up.
_BETTER = {
    "success": "higher smoothed success",
    "corrections": "fewer corrections per run",
    "usage": "more runs of evidence",
    "recency": "more recently used",
    "sink": "no negative-feedback sink",
}


@dataclass(frozen=True, slots=True)
class Choice:
    """The outcome of :func:`choose_best`: the winner and every candidate, ranked."""

    winner: Candidate | None
    ranked: list[tuple[Candidate, ScoreBreakdown]] = field(default_factory=list)
    """Eligible versions best first (ties: higher version), then ineligible ones."""

    def explain(self) -> list[str]:
        """Readable lines: why the winner won, then every candidate's score and terms."""
        eligible = [(c, b) for c, b in self.ranked if b.ineligible is None]
        trying = any(b.ineligible and c.version.status == Status.PUBLISHED for c, b in self.ranked)
        head = _headline(eligible, trying) if eligible else "no published version: nothing to run"
        lines = [head]
        for c, b in self.ranked:
            status = f"ineligible: {b.ineligible}" if b.ineligible else c.version.status.value
            lines.append(f"  {c.version.ref} [{status}] {b.line()}")
        return lines


def _headline(eligible: list[tuple[Candidate, ScoreBreakdown]], trying: bool) -> str:
    (win, wb) = eligible[0]
    if len(eligible) == 1:
        only = "the only published version not on trial" if trying else "the only published version"
        return f"{win.version.ref} wins: {wb.total:.2f} — {only}"
    run, rb = eligible[1]
    head = f"{win.version.ref} wins: {wb.total:.2f} vs @{run.version.version} {rb.total:.2f}"
    if round(wb.total, 9) == round(rb.total, 9):
        return f"{head} — tie, broken by the higher version number"
    # The deciding terms: where the winner gained most over the runner-up, biggest first.
    gains = sorted(
        ((w.value - r.value, w, r) for w, r in zip(wb.terms, rb.terms, strict=True)),
        key=lambda g: -g[0],
    )
    why = [
        f"{_BETTER[w.name]} ({_fmt(w.name, w.measure)} vs {_fmt(r.name, r.measure)})"
        for gain, w, r in gains[:3]
        if gain > 1e-9
    ]
    return f"{head} — {', '.join(why)}"


def _fmt(name: str, x: float) -> str:
    # Each measure in its natural unit: runs and idle days are counts, the rest rates.
    if name == "usage":
        return f"{x:.0f}"
    if name == "recency":
        return f"{x:.0f}d idle"
    if name == "corrections":
        return f"{x:.1f}"
    return f"{x:.2f}"


def _why_ineligible(v: SopVersion, on_trial: Mapping[int, str]) -> str | None:
    if v.status == Status.PUBLISHED:
        return on_trial.get(v.version)
    if v.status == Status.DRAFT:
        return "draft awaiting review"
    # The latest deprecation says why (a trial's rollback, a sink, a person's reason).
    why = next((e.why for e in reversed(v.change_log) if e.why.startswith("deprecated: ")), "")
    return f"deprecated ({why.removeprefix('deprecated: ')})" if why else "deprecated"


def choose_best(
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    policy: ScoringPolicy = ScoringPolicy(),
    on_trial: Mapping[int, str] | None = None,
) -> Choice:
    """Rank every candidate and pick the best published one (None if there is none).

    ``on_trial``: version number -> why it cannot win (it runs as a trial beside the best in a
    share of rooms, see :mod:`framework.sop.trials`). Ignored when no other published version
    could win: an SOP never ends up without a best.
    """
    trial = dict(on_trial or {})
    others = [c for c in candidates if c.version.status == Status.PUBLISHED]
    if all(c.version.version in trial for c in others):
        trial = {}
    scored = [
        (c, replace(score(c, now=now, policy=policy), ineligible=_why_ineligible(c.version, trial)))
        for c in candidates
    ]
    # Round so float noise cannot break a real tie; then the higher version wins it.
    scored.sort(
        key=lambda cb: (
            cb[1].ineligible is not None,
            -round(cb[1].total, 9),
            -cb[0].version.version,
            cb[0].version.sop_id,
        )
    )
    winner = scored[0][0] if scored and scored[0][1].ineligible is None else None
    return Choice(winner=winner, ranked=scored)


def auto_deprecate(
    candidates: Sequence[Candidate], *, policy: ScoringPolicy = ScoringPolicy()
) -> list[tuple[SopVersion, str]]:
    """Published versions that sank below the threshold, with why; never an SOP's last one.

    Grouped by SOP id. If every published version of an SOP sank, the one with the best
    smoothed success (then the higher version) stays published, so the SOP keeps a version.
    """
    out: list[tuple[SopVersion, str]] = []
    by_sop: dict[str, list[Candidate]] = {}
    for c in candidates:
        if c.version.status == Status.PUBLISHED:
            by_sop.setdefault(c.version.sop_id, []).append(c)
    for sop_id in sorted(by_sop):
        published = by_sop[sop_id]
        sunk = [c for c in published if _sinks(c.metrics, policy)]
        if len(sunk) == len(published):
            keep = max(sunk, key=lambda c: (_smoothed(c.metrics, policy), c.version.version))
            sunk = [c for c in sunk if c is not keep]
        for c in sorted(sunk, key=lambda c: c.version.version):
            m = c.metrics
            why = (
                f"success {m.successes}/{m.runs} = {m.successes / m.runs:.0%} < "
                f"{policy.deprecate_below:.0%} after ≥{policy.min_runs_to_judge} runs"
            )
            out.append((c.version, why))
    return out


def _smoothed(m: VersionMetrics, p: ScoringPolicy) -> float:
    return (m.successes + p.prior_success * p.prior_weight) / (max(m.runs, 0) + p.prior_weight)
