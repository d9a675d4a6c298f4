"""SOP drafts nobody asked for, as a person sees them in the terminal: a DM with a model that
really writes files (an OpenAI-compatible stub server), ``staffroom close``, ``sop show``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from paths import ROOT
from stub_openai import StubOpenAI

REQUESTS = "帮我写灰度方案\n再补充回滚预案\n最后列一个上线检查清单\n"


def staffroom(*args: str, data: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "STAFFROOM_MODEL"}
    # `sop` takes the data folder before its sub-command.
    where = ["--data-dir", str(data)]
    given = [args[0], *where, *args[1:]] if args[0] == "sop" else [*args, *where]
    cmd = [sys.executable, "-m", "framework", *given]
    return subprocess.run(
        cmd,
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def script_work(stub: StubOpenAI, last: str) -> None:
    """Three turns that each write a file and say so; the third says ``last``."""
    for path, said in [("plan.md", "灰度方案写在 plan.md。"), ("rollback.md", "回滚预案写好了。")]:
        stub.tool_call("write_file", {"path": path, "content": f"# {path}\n"}).reply(said)
    stub.tool_call("write_file", {"path": "check.md", "content": "# check\n"}).reply(last)


def logged(data: Path, kind: str) -> list[dict[str, Any]]:
    log = data / "sessions" / "dm:alice@engineer.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return [e for e in events if e["kind"] == kind]


def test_a_reported_done_task_is_proposed_as_a_draft_once(tmp_path: Path) -> None:
    with StubOpenAI(default_text="好的。") as stub:
        script_work(stub, "检查清单已写好。任务完成！")
        model = f"openai:stub-model@{stub.base_url}"
        chat = staffroom("dm", "engineer", "--user", "alice", "--model", model, data=tmp_path,
                         stdin=REQUESTS)  # fmt: skip
        assert chat.returncode == 0, chat.stdout + chat.stderr
        assert "◆ SOP draft engineer-practice@1 extracted" in chat.stdout
        approve = f"staffroom sop --data-dir {tmp_path} approve engineer-practice@1 --by NAME"
        assert approve in chat.stdout  # the hint carries the data folder: it runs as printed

        shown = staffroom("sop", "show", "engineer-practice@1", data=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "draft" in shown.stdout and "reported the task done" in shown.stdout
        assert "再补充回滚预案" in shown.stdout and "auto-extraction" in shown.stdout

        closed = staffroom("close", "dm:alice@engineer", "--model", model, data=tmp_path)
        assert closed.returncode == 0, closed.stdout + closed.stderr
        assert "SOP draft" not in closed.stdout  # that span was distilled already
    [told] = logged(tmp_path, "extraction")
    assert told["content"]["trigger"] == "task_done"
    listed = staffroom("sop", "list", data=tmp_path)
    assert "engineer-practice" in listed.stdout and "engineer-practice@2" not in listed.stdout


def test_a_session_that_ends_after_work_proposes_a_draft_at_its_end(tmp_path: Path) -> None:
    with StubOpenAI(default_text="好的。") as stub:
        script_work(stub, "检查清单写在 check.md，你看一下。")
        model = f"openai:stub-model@{stub.base_url}"
        chat = staffroom("dm", "engineer", "--user", "alice", "--model", model, data=tmp_path,
                         stdin=REQUESTS)  # fmt: skip
        assert chat.returncode == 0, chat.stdout + chat.stderr
        assert "SOP draft" not in chat.stdout  # nobody said it was done

        closed = staffroom("close", "dm:alice@engineer", "--model", model, data=tmp_path)
        assert closed.returncode == 0, closed.stdout + closed.stderr
        assert "◆ SOP draft engineer-practice@1 extracted" in closed.stdout
        assert f"staffroom sop --data-dir {tmp_path} show engineer-practice@1" in closed.stdout
        again = staffroom("close", "dm:alice@engineer", "--model", model, data=tmp_path)
        assert "already ended" in again.stdout
    [told] = logged(tmp_path, "extraction")
    assert told["content"]["trigger"] == "session_end"
    assert "the session ended (closed)" in told["content"]["why"]
    shown = staffroom("sop", "show", "engineer-practice@1", data=tmp_path)
    assert "draft" in shown.stdout and "the session ended" in shown.stdout
