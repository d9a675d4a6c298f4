"""Best-version score: deterministic, explainable, and sinking what fails or sits unused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from framework.sop.model import SopVersion, Status, Step, VersionMetrics
from framework.sop.scoring import (
    Candidate,
    ScoringPolicy,
    auto_deprecate,
    choose_best,
    score,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
STEPS = (Step(("writer",), "写初稿"),)


def ago(days: float) -> str:
    return (NOW - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def cand(
    version: int,
    *,
    runs: int = 0,
    successes: int = 0,
    corrections: int = 0,
    last_used: str = "",
    status: Status = Status.PUBLISHED,
    sop_id: str = "tech-article",
) -> Candidate:
    v = SopVersion(sop_id, version, "写技术文章", "scenario:tech-article", STEPS, status=status)
    m = VersionMetrics(runs=runs, successes=successes, corrections=corrections, last_used=last_used)
    return Candidate(v, m)


def test_terms_add_up_and_each_has_a_reason() -> None:
    b = score(cand(1, runs=4, successes=3, corrections=2, last_used=ago(1)), now=NOW)
    assert [t.name for t in b.terms] == ["success", "corrections", "usage", "recency", "sink"]
    assert b.total == pytest.approx(sum(t.value for t in b.terms))
    assert b.term("success").value == pytest.approx((3 + 1) / (4 + 2))
    assert b.term("corrections").value == pytest.approx(-0.2 * 0.5)
    assert all(t.reason and "\n" not in t.reason for t in b.terms)
    assert b.line().startswith(f"{b.total:.2f} = success +0.67")


def test_more_successes_and_fewer_corrections_win() -> None:
    good = cand(2, runs=6, successes=6, corrections=0, last_used=ago(1))
    bad = cand(3, runs=6, successes=2, corrections=9, last_used=ago(1))
    choice = choose_best([bad, good], now=NOW)
    assert choice.winner is good
    headline = choice.explain()[0]
    assert headline.startswith("tech-article@2 wins: ")
    assert " vs @3 " in headline
    assert "fewer corrections per run (0.0 vs 1.5)" in headline
    assert "higher smoothed success" in headline


def test_untried_new_version_beats_a_corrected_one_but_not_a_proven_one() -> None:
    untried = cand(2)
    corrected = cand(1, runs=2, successes=0, corrections=3, last_used=ago(1))
    assert choose_best([corrected, untried], now=NOW).winner is untried
    proven = cand(1, runs=10, successes=10, last_used=ago(1))
    choice = choose_best([proven, untried], now=NOW)
    assert choice.winner is proven
    assert "more runs of evidence (10 vs 0)" in choice.explain()[0]
    # One lucky run is not evidence enough against a slightly worse long record.
    lucky = cand(3, runs=1, successes=1, last_used=ago(1))
    steady = cand(1, runs=20, successes=18, corrections=1, last_used=ago(1))
    assert choose_best([lucky, steady], now=NOW).winner is steady


def test_never_used_version_is_not_decayed() -> None:
    b = score(cand(2), now=NOW)
    assert b.term("recency").value == 0.0
    assert "never used" in b.term("recency").reason
    assert b.total == pytest.approx(0.5)


def test_stale_versions_decay_with_the_half_life() -> None:
    fresh = score(cand(1, runs=5, successes=5, last_used=ago(30)), now=NOW)
    assert fresh.term("recency").value == 0.0
    base = fresh.total
    one = score(cand(1, runs=5, successes=5, last_used=ago(60)), now=NOW)
    two = score(cand(1, runs=5, successes=5, last_used=ago(90)), now=NOW)
    assert one.total == pytest.approx(base / 2)
    assert two.total == pytest.approx(base / 4)
    assert "idle 60 days > 30" in one.term("recency").reason
    # Naive "now" is read as UTC, same result.
    naive = score(cand(1, runs=5, successes=5, last_used=ago(60)), now=NOW.replace(tzinfo=None))
    assert naive.total == pytest.approx(one.total)


def test_a_stale_proven_version_loses_to_a_recent_one() -> None:
    old = cand(1, runs=10, successes=9, last_used=ago(200))
    recent = cand(2, runs=3, successes=3, last_used=ago(2))
    choice = choose_best([old, recent], now=NOW)
    assert choice.winner is recent
    assert "more recently used" in choice.explain()[0]


def test_negative_feedback_sink_after_enough_runs() -> None:
    policy = ScoringPolicy()
    judged = score(cand(1, runs=5, successes=1, last_used=ago(1)), now=NOW)
    assert judged.term("sink").value == -policy.sink_penalty
    assert "20% < 30% after 5 runs" in judged.term("sink").reason
    early = score(cand(1, runs=4, successes=0, last_used=ago(1)), now=NOW)
    assert early.term("sink").value == 0.0


def test_deprecated_and_draft_never_win_and_say_why() -> None:
    deprecated = cand(3, runs=50, successes=50, last_used=ago(1), status=Status.DEPRECATED)
    draft = cand(4, runs=50, successes=50, last_used=ago(1), status=Status.DRAFT)
    weak = cand(1, runs=5, successes=1, corrections=5, last_used=ago(1))
    choice = choose_best([deprecated, draft, weak], now=NOW)
    assert choice.winner is weak
    assert [c.version.version for c, _ in choice.ranked] == [1, 4, 3]
    assert [b.ineligible for _, b in choice.ranked] == [None, "draft awaiting review", "deprecated"]
    lines = choice.explain()
    assert (
        lines[0]
        == f"tech-article@1 wins: {choice.ranked[0][1].total:.2f} — the only published version"
    )
    assert any("tech-article@3 [ineligible: deprecated]" in line for line in lines)
    none = choose_best([deprecated, draft], now=NOW)
    assert none.winner is None
    assert none.explain()[0] == "no published version: nothing to run"
    assert choose_best([], now=NOW).winner is None


def test_ties_break_by_higher_version() -> None:
    choice = choose_best([cand(1), cand(3), cand(2)], now=NOW)
    assert choice.winner is not None and choice.winner.version.version == 3
    assert "tie, broken by the higher version number" in choice.explain()[0]


def test_explain_lists_every_candidate_with_terms() -> None:
    choice = choose_best(
        [cand(1, runs=3, successes=2, corrections=1, last_used=ago(3)), cand(2)], now=NOW
    )
    lines = choice.explain()
    assert len(lines) == 3
    assert all("success" in line and "corrections" in line for line in lines[1:])


def test_deterministic_regardless_of_input_order() -> None:
    cands = [
        cand(1, runs=3, successes=2, corrections=1, last_used=ago(3)),
        cand(2, runs=3, successes=2, corrections=1, last_used=ago(3)),
        cand(3, runs=8, successes=7, last_used=ago(40)),
        cand(4, status=Status.DRAFT),
    ]
    first = choose_best(cands, now=NOW)
    again = choose_best(list(reversed(cands)), now=NOW)
    assert first.explain() == again.explain()
    assert [c.version.version for c, _ in first.ranked] == [
        c.version.version for c, _ in again.ranked
    ]


def test_auto_deprecate_by_threshold_with_reason() -> None:
    failing = cand(1, runs=6, successes=1, last_used=ago(1))
    ok = cand(2, runs=6, successes=5, last_used=ago(1))
    young = cand(3, runs=2, successes=0, last_used=ago(1))
    out = auto_deprecate([failing, ok, young])
    assert [(v.version, why) for v, why in out] == [(1, "success 1/6 = 17% < 30% after ≥5 runs")]
    strict = auto_deprecate([failing, ok, young], policy=ScoringPolicy(min_runs_to_judge=2))
    assert [v.version for v, _ in strict] == [1, 3]


def test_auto_deprecate_never_removes_the_last_published_version() -> None:
    only = cand(1, runs=9, successes=0, last_used=ago(1))
    assert auto_deprecate([only]) == []
    worse = cand(2, runs=9, successes=0, corrections=9, last_used=ago(1))
    better = cand(3, runs=9, successes=2, last_used=ago(1))
    draft = cand(4, status=Status.DRAFT)
    out = auto_deprecate([worse, better, draft, only])
    assert sorted(v.version for v, _ in out) == [1, 2]  # 3 (best of the sunk) stays
    # Versions of other SOPs are judged separately.
    other = cand(1, runs=9, successes=0, sop_id="other")
    assert [v.ref for v, _ in auto_deprecate([only, other])] == []
