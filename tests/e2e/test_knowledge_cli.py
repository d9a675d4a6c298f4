"""The knowledge commands from a terminal: trackers, knowledge, search, extract, reflect,
proposal and forget, on one data folder, as a person would run them."""

from __future__ import annotations

from pathlib import Path

from cli_in_process import Cli


def test_knowledge_from_the_command_line(cli: Cli, tmp_path: Path) -> None:
    said = "决定：发布前必须先灰度 10% 流量\n任务：整理部署手册\n改进：每次上线前跑一遍配置校验\n"
    assert cli("dm", "pm", "--user", "alice", data=tmp_path, stdin=said).code == 0
    closed = cli("close", "dm:alice@pm", data=tmp_path)
    assert closed.code == 0, closed.err

    trackers = cli("trackers", "pm", data=tmp_path)
    assert trackers.code == 0, trackers.err
    assert "整理部署手册" in trackers.out and "reflection biweekly" in trackers.out
    proposal_id = next(
        line.split()[0] for line in trackers.out.splitlines() if "proposal by pm" in line
    )

    listed = cli("knowledge", "list", "--employee", "pm", data=tmp_path)
    assert listed.code == 0 and "strategy" in listed.out, listed.out
    stale = cli("knowledge", "stale", "--days", "0", "--employee", "pm", data=tmp_path)
    assert stale.code == 0 and "knowledge/pm/strategy" in stale.out

    found = cli("search", "灰度", "--employee", "pm", data=tmp_path)
    assert found.code == 0 and "灰度" in found.out, found.out + found.err
    missing = cli("search", "kubernetes", data=tmp_path)
    assert missing.code == 1 and "No knowledge found" in missing.out
    refused = cli("search", "灰度", "-e", "engineer", "--partition", "isolated", data=tmp_path)
    assert refused.code == 2 and "isolated" in refused.err
    assert "Traceback" not in refused.err

    decided = cli("proposal", proposal_id, "approve", "--by", "alice", data=tmp_path)
    assert decided.code == 0 and "approved by alice" in decided.out, decided.err
    twice = cli("proposal", proposal_id, "reject", "--by", "alice", data=tmp_path)
    assert twice.code == 2 and "already approved" in twice.err

    more = "任务：补充回滚预案\n"
    assert cli("dm", "pm", "--user", "alice", data=tmp_path, stdin=more).code == 0
    extracted = cli("extract", "dm:alice@pm", data=tmp_path)
    assert extracted.code == 0, extracted.err
    assert "补充回滚预案" in extracted.out and "self-check gate" in extracted.out
    again = cli("extract", "dm:alice@pm", data=tmp_path)
    assert "nothing new to extract" in again.out

    none_due = cli("reflect", "pm", data=tmp_path)
    assert none_due.code == 0 and "no reflection is due" in none_due.out

    forgot = cli("forget", "灰度", data=tmp_path)
    assert forgot.code == 0, forgot.err
    assert "topic" in forgot.out and "灰度" in forgot.out
    gone = cli("search", "灰度", "--employee", "pm", data=tmp_path)
    assert gone.code == 1 and "No knowledge found" in gone.out
    # Everything about a person goes, MEMORY.md folders too (the data folder's one Stores).
    (tmp_path / "memory" / "pm" / "alice").mkdir(parents=True, exist_ok=True)
    (tmp_path / "memory" / "pm" / "alice" / "MEMORY.md").write_text("# Memory\n", "utf-8")
    person = cli("forget", "--person", "alice", data=tmp_path)
    assert person.code == 0, person.err
    assert not (tmp_path / "memory" / "pm" / "alice").exists()
