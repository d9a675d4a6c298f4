"""A server killed in the middle of a run: the run is finished when the next one starts."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
from paths import ROOT
from serve_process import ServeProcess, wait_until

KEY = "room%3Ar1"


def said(client: httpx.Client) -> list[str]:
    events = client.get(f"/api/sessions/{KEY}/history?limit=1000").json()["events"]
    return [e["author"] for e in events if e["kind"] == "message"]


def test_a_run_cut_off_by_a_kill_is_finished_when_the_server_starts_again(
    tmp_path: Path, project: Path, desk: Callable[..., str]
) -> None:
    # The conftest's project (employees, a scenario written by `desk`), with the SOPs too.
    shutil.copytree(ROOT / "sop_library", project / "sop_library")
    assert desk("enqueue", delay=1.0) == "desk-enqueue"
    args = ["--no-auth", "--project", str(project)]
    server = ServeProcess(tmp_path / "data", tmp_path / "serve.log", args, {"NO_COLOR": "1"})
    with server, server.client() as http:
        assert http.put("/api/rooms/r1", json={"scenario": "desk-enqueue"}).is_success
        wait_until(lambda: not http.get(f"/api/sessions/{KEY}/status").json()["busy"], "idle")
        body = {"text": "@pm @engineer @designer q0", "author": "alice", "message_id": "q0"}
        accepted = http.post(f"/api/sessions/{KEY}/messages", json={**body, "wait": False})
        assert accepted.status_code == 202
        # pm answered; engineer is thinking
        wait_until(lambda: said(http)[-1:] == ["pm"], "pm's answer")
        server.kill()
    with server, server.client() as http:  # started again over the same data folder
        wait_until(lambda: said(http) == ["alice", "pm", "engineer", "designer"], "the rest")
        again = http.post(f"/api/sessions/{KEY}/messages", json=body).json()
        assert again["duplicate"] and again["status"] == "done"
        said_again = [e["author"] for e in again["events"] if e["kind"] == "message"]
        assert said_again == ["alice", "pm", "engineer", "designer"]
