"""The seed's example end to end: a preference stated once is kept across processes."""

from __future__ import annotations

import json
from pathlib import Path

from cli_in_process import Cli


def tool_calls(log: Path) -> list[dict[str, object]]:
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e["content"] for e in events if e["kind"] == "tool_call"]


def test_language_preference_is_replaced_and_used_in_the_next_process(
    cli: Cli, tmp_path: Path
) -> None:
    first = cli("dm", "pm", "--user", "alice", data=tmp_path, stdin="请用中文回复我\n")
    assert first.code == 0, first.err
    second = cli("dm", "pm", "--user", "alice", data=tmp_path, stdin="以后回我用英文吧\n")
    assert second.code == 0, second.err

    calls = tool_calls(tmp_path / "sessions" / "dm:alice@pm.jsonl")
    assert calls[-1] == {
        "name": "memory",
        "args": {
            "action": "replace",
            "section": "preferences",
            "content": "偏好语言: English",
            "old": "偏好语言: 中文",
        },
        "call_id": "call-memory-pm",
    }
    memory = (tmp_path / "memory" / "pm" / "alice" / "MEMORY.md").read_text(encoding="utf-8")
    assert "偏好语言: English" in memory and "偏好语言: 中文" not in memory

    # A new process, a Chinese message: the stored preference wins.
    third = cli("dm", "pm", "--user", "alice", data=tmp_path, stdin="今天的计划是什么？\n")
    assert third.code == 0, third.err
    assert "From the product side" in third.out
    # Another user is untouched by alice's preference.
    other = cli("dm", "pm", "--user", "bob", data=tmp_path, stdin="今天的计划是什么？\n")
    assert "从产品角度" in other.out

    shown = cli("memory", "pm", "--user", "alice", data=tmp_path)
    assert "偏好语言: English" in shown.out
    # Where it came from, and the value it replaced, are shown here and nowhere in a prompt.
    assert "· 偏好语言: English: from dm:alice@pm, added" in shown.out
    assert "superseded" in shown.out and "偏好语言: 中文 (by: 偏好语言: English)" in shown.out


def test_consolidate_command_folds_old_turns(cli: Cli, tmp_path: Path) -> None:
    lines = "".join(f"第 {i} 个问题：部署方案怎么选？\n" for i in range(14))
    cli("dm", "engineer", "--user", "carol", data=tmp_path, stdin=lines)
    history = tmp_path / "history" / "dm:carol@engineer" / "HISTORY.md"
    # 28 messages > memory_window 20: the background task already folded the oldest.
    assert history.exists()
    before = history.read_text(encoding="utf-8")
    done = cli("consolidate", "dm:carol@engineer", "--force", data=tmp_path)
    assert done.code == 0, done.err
    assert "consolidated" in done.out
    after = history.read_text(encoding="utf-8")
    assert len(after) > len(before)
    assert "carol：第 0 个问题" in after


def test_memory_of_an_unknown_employee_is_an_error_with_a_did_you_mean(
    tmp_path: Path, cli: Cli
) -> None:
    folder = ["--data-dir", str(tmp_path)]
    for args, said in [
        (["memory", "nobody", "--user", "alice"], "unknown employee 'nobody'"),
        (["memory", "desginer", "--user", "alice"], "(did you mean 'designer'?)"),
        (["memory", "nobody", "--user", "alice", "--share", "none"], "unknown employee"),
    ]:
        done = cli(*args, *folder)
        assert done.code == 2 and "Traceback" not in done.err, (args, done.out, done.err)
        assert done.err.startswith("error: employee: ") and said in done.err, done.err
        assert "known employees: designer, engineer, lead, oncall, pm, reviewer, triage" in done.err
    assert not (tmp_path / "memory").exists(), "nothing is written for a name that is no one"

    # Memory this folder holds (an employee of another project, or one since removed) is
    # still shown: it names someone.
    kept = tmp_path / "memory" / "ghost" / "alice" / "MEMORY.md"
    kept.parent.mkdir(parents=True)
    kept.write_text("## 事实\n- alice 喜欢简洁\n", encoding="utf-8")
    shown = cli("memory", "ghost", "--user", "alice", *folder)
    assert shown.code == 0 and "alice 喜欢简洁" in shown.out, shown.err
