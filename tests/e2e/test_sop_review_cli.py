"""Review and trial of a proposed SOP version, from the command line in real processes.

A run proposes tech-article@2 for the reviewers the scenario names; publishing it is refused
until both approved; once published it runs as a trial in half the new rooms; it does worse
than @1 and the next room's entry rolls it back, which ``sop explain`` shows.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_in_process import Cli, CliResult
from paths import ROOT

from framework.sop.trials import in_trial


def room_on(side: bool) -> str:
    """A room id whose room lands on the trial's side (True) or the best's of @2."""
    return next(
        f"t{i}" for i in range(1000) if in_trial("tech-article@2", f"room:t{i}", 0.5) == side
    )


def test_a_proposed_version_is_reviewed_then_tried_then_rolled_back(
    cli: Cli, tmp_path: Path
) -> None:
    scenario = tmp_path / "review.yaml"
    text = (ROOT / "scenarios" / "tech_article.yaml").read_text(encoding="utf-8")
    extra = "  sop_reviewers: [author, team-lead]\n  sop_trial_share: 0.5\n  sop_trial_runs: 1\n"
    scenario.write_text(text.rstrip("\n") + "\n" + extra, encoding="utf-8")
    data = tmp_path / "d"

    def run(room: str, line: str) -> CliResult:
        script = tmp_path / f"{room}.txt"
        script.write_text(line + "\n", encoding="utf-8")
        return cli("run", str(scenario), "--room", room, "--script", str(script),
                         "--data-dir", str(data))  # fmt: skip

    def sop(*args: str) -> CliResult:
        return cli("sop", "--data-dir", str(data), *args)

    first = run("c1", "纠正: order 3 before 2 先定配图再写正文\\n评分: 2/5")
    assert first.code == 0, first.err
    assert "◆ proposed tech-article@2 (draft)" in first.out
    assert "awaiting approval from: author, team-lead" in sop("show", "tech-article@2").out

    # Nobody approved: exit 2, who is missing and the command to fix it, nothing published.
    refused = sop("publish", "tech-article@2")
    assert refused.code == 2 and "Traceback" not in refused.err
    assert "needs approval from: author, team-lead" in refused.err
    assert f"staffroom sop --data-dir {data} approve tech-article@2 --by team-lead" in refused.err
    assert sop("approve", "tech-article@2", "--by", "author").code == 0
    still = sop("publish", "tech-article@2", "--require", "manager")
    assert still.code == 2 and "needs approval from: team-lead, manager" in still.err
    assert sop("approve", "tech-article@2", "--by", "team-lead").code == 0
    published = sop("publish", "tech-article@2")
    assert published.code == 0, published.err
    # It says that it starts a trial, for which share of rooms and until when.
    assert (
        "tech-article@2 is published on trial: about 50% of new rooms of tech-article run it, "
        "the others run tech-article@1 (the best now), until each has run 3 times"
    ) in " ".join(published.out.split())
    explained = sop("explain", "tech-article").out
    assert "tech-article@1 wins" in explained and "[ineligible: on trial since" in explained

    # One room on each side; the trial's run fails, the best's succeeds.
    trial_room, best_room = room_on(True), room_on(False)
    on_trial = run(trial_room, "评分: 1/5")
    assert on_trial.code == 0 and "outcome of tech-article@2" in on_trial.out
    entry = json.loads((data / "sessions" / f"room:{trial_room}.jsonl").read_text().splitlines()[0])
    assert entry["content"]["sop"] == "tech-article@2"
    assert entry["content"]["sop_trials"]["tech-article"]["arm"] == "trial"
    assert entry["meta"]["sop"] == "tech-article@2" and entry["meta"]["sop_trial"] is True
    # The transcript and `history` say which version the room runs, and that it is a trial.
    assert "tech-article@2 (on trial beside tech-article@1)" in on_trial.out
    shown = cli("history", f"room:{trial_room}", "--data-dir", str(data)).out
    assert "tech-article@2 (on trial beside tech-article@1)" in shown
    on_best = run(best_room, "评分: 5/5")
    assert on_best.code == 0 and "outcome of tech-article@1: success" in on_best.out
    # The panel title is cut at the terminal width (80 columns here): its start says it.
    assert "tech-article@1 (the best;" in on_best.out

    # The next room's entry judges the trial: @2 did worse, @1 keeps serving.
    after = run("after", "评分: 5/5")
    assert after.code == 0 and "sop tech-article@1" in after.out
    explained = sop("explain", "tech-article").out
    assert "tech-article@2 [ineligible: deprecated (rolled back after a trial" in explained
    assert "trial: tech-article@2 rolled back" in explained
    assert "success 0/1" in explained and "success 1/1" in explained
