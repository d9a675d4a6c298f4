"""The knowledge commands from a terminal: trackers, knowledge, search, extract, reflect,
proposal and forget, on one data folder, as a person would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import ROOT


def staffroom(*args: str, data: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "framework", *args, "--data-dir", str(data)]
    return subprocess.run(
        cmd, cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def test_knowledge_from_the_command_line(tmp_path: Path) -> None:
    said = "决定：发布前必须先灰度 10% 流量\n任务：整理部署手册\n改进：每次上线前跑一遍配置校验\n"
    assert staffroom("dm", "pm", "--user", "alice", data=tmp_path, stdin=said).returncode == 0
    closed = staffroom("close", "dm:alice@pm", data=tmp_path)
    assert closed.returncode == 0, closed.stderr

    trackers = staffroom("trackers", "pm", data=tmp_path)
    assert trackers.returncode == 0, trackers.stderr
    assert "整理部署手册" in trackers.stdout and "reflection biweekly" in trackers.stdout
    proposal_id = next(
        line.split()[0] for line in trackers.stdout.splitlines() if "proposal by pm" in line
    )

    listed = staffroom("knowledge", "list", "--employee", "pm", data=tmp_path)
    assert listed.returncode == 0 and "strategy" in listed.stdout, listed.stdout
    stale = staffroom("knowledge", "stale", "--days", "0", "--employee", "pm", data=tmp_path)
    assert stale.returncode == 0 and "knowledge/pm/strategy" in stale.stdout

    found = staffroom("search", "灰度", "--employee", "pm", data=tmp_path)
    assert found.returncode == 0 and "灰度" in found.stdout, found.stdout + found.stderr
    missing = staffroom("search", "kubernetes", data=tmp_path)
    assert missing.returncode == 1 and "No knowledge found" in missing.stdout
    refused = staffroom(
        "search", "灰度", "-e", "engineer", "--partition", "isolated", data=tmp_path
    )
    assert refused.returncode == 2 and "isolated" in refused.stderr
    assert "Traceback" not in refused.stderr

    decided = staffroom("proposal", proposal_id, "approve", "--by", "alice", data=tmp_path)
    assert decided.returncode == 0 and "approved by alice" in decided.stdout, decided.stderr
    twice = staffroom("proposal", proposal_id, "reject", "--by", "alice", data=tmp_path)
    assert twice.returncode == 2 and "already approved" in twice.stderr

    more = "任务：补充回滚预案\n"
    assert staffroom("dm", "pm", "--user", "alice", data=tmp_path, stdin=more).returncode == 0
    extracted = staffroom("extract", "dm:alice@pm", data=tmp_path)
    assert extracted.returncode == 0, extracted.stderr
    assert "补充回滚预案" in extracted.stdout and "self-check gate" in extracted.stdout
    again = staffroom("extract", "dm:alice@pm", data=tmp_path)
    assert "nothing new to extract" in again.stdout

    none_due = staffroom("reflect", "pm", data=tmp_path)
    assert none_due.returncode == 0 and "no reflection is due" in none_due.stdout

    forgot = staffroom("forget", "灰度", data=tmp_path)
    assert forgot.returncode == 0, forgot.stderr
    assert "topic" in forgot.stdout and "灰度" in forgot.stdout
    gone = staffroom("search", "灰度", "--employee", "pm", data=tmp_path)
    assert gone.returncode == 1 and "No knowledge found" in gone.stdout
