"""SOP drafts nobody asked for, as a person sees them in the terminal: a DM with a model that
really writes files (an OpenAI-compatible stub server), ``staffroom close``, ``sop show``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_in_process import Cli, CliResult
from stub_openai import StubOpenAI

REQUESTS = "帮我写灰度方案\n再补充回滚预案\n最后列一个上线检查清单\n"


def dm_about_work(cli: Cli, stub: StubOpenAI, data: Path, last: str) -> tuple[str, CliResult]:
    """alice asks engineer (on ``stub``) for three things in a DM; each turn writes a file and
    says so, the third says ``last``. The ``--model`` it ran on, and what the DM printed."""
    for path, said in [("plan.md", "灰度方案写在 plan.md。"), ("rollback.md", "回滚预案写好了。")]:
        stub.tool_call("write_file", {"path": path, "content": f"# {path}\n"}).reply(said)
    stub.tool_call("write_file", {"path": "check.md", "content": "# check\n"}).reply(last)
    model = f"openai:stub-model@{stub.base_url}"
    chat = cli("dm", "engineer", "--user", "alice", "--model", model, data=data, stdin=REQUESTS)
    assert chat.code == 0, chat.out + chat.err
    return model, chat


def logged(data: Path, kind: str) -> list[dict[str, Any]]:
    log = data / "sessions" / "dm:alice@engineer.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e for e in events if e["kind"] == kind]


def test_a_reported_done_task_is_proposed_as_a_draft_once(cli: Cli, tmp_path: Path) -> None:
    with StubOpenAI(default_text="好的。") as stub:
        model, chat = dm_about_work(cli, stub, tmp_path, "检查清单已写好。任务完成！")
        assert "◆ SOP draft engineer-practice@1 extracted" in chat.out
        approve = f"staffroom sop --data-dir {tmp_path} approve engineer-practice@1 --by NAME"
        assert approve in chat.out  # the hint carries the data folder: it runs as printed

        shown = cli("sop", "show", "engineer-practice@1", data=tmp_path)
        assert shown.code == 0, shown.err
        assert "draft" in shown.out and "reported the task done" in shown.out
        assert "再补充回滚预案" in shown.out and "auto-extraction" in shown.out

        closed = cli("close", "dm:alice@engineer", "--model", model, data=tmp_path)
        assert closed.code == 0, closed.out + closed.err
        assert "SOP draft" not in closed.out  # that span was distilled already
    [told] = logged(tmp_path, "extraction")
    assert told["content"]["trigger"] == "task_done"
    listed = cli("sop", "list", data=tmp_path)
    assert "engineer-practice" in listed.out and "engineer-practice@2" not in listed.out


def test_a_session_that_ends_after_work_proposes_a_draft_at_its_end(
    cli: Cli, tmp_path: Path
) -> None:
    with StubOpenAI(default_text="好的。") as stub:
        model, chat = dm_about_work(cli, stub, tmp_path, "检查清单写在 check.md，你看一下。")
        assert "SOP draft" not in chat.out  # nobody said it was done

        closed = cli("close", "dm:alice@engineer", "--model", model, data=tmp_path)
        assert closed.code == 0, closed.out + closed.err
        assert "◆ SOP draft engineer-practice@1 extracted" in closed.out
        assert f"staffroom sop --data-dir {tmp_path} show engineer-practice@1" in closed.out
        again = cli("close", "dm:alice@engineer", "--model", model, data=tmp_path)
        assert "already ended" in again.out
    [told] = logged(tmp_path, "extraction")
    assert told["content"]["trigger"] == "session_end"
    assert "the session ended (closed)" in told["content"]["why"]
    shown = cli("sop", "show", "engineer-practice@1", data=tmp_path)
    assert "draft" in shown.out and "the session ended" in shown.out
