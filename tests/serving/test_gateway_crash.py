"""A server killed in the middle of a run: the run is finished when the next one starts."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from paths import ROOT

KEY = "room%3Ar1"


class Serve:
    """`staffroom serve --no-auth` on a free port over one data folder and project."""

    def __init__(self, project: Path, data: Path) -> None:
        cmd = [sys.executable, "-m", "framework", "serve", "--no-auth", "--port", "0",
               "--data-dir", str(data), "--project", str(project)]  # fmt: skip
        env = {**os.environ, "NO_COLOR": "1"}
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        assert "serving on http://" in first, first
        self.url = first.split("serving on ", 1)[1].split()[0]
        stdout = self.proc.stdout
        threading.Thread(target=lambda: [None for _ in stdout], daemon=True).start()
        self.http = httpx.Client(base_url=self.url, timeout=120)
        until(lambda: self._up())

    def _up(self) -> bool:
        try:
            return self.http.get("/api/health").status_code == 200
        except httpx.TransportError:
            return False

    def said(self) -> list[str]:
        events = self.http.get(f"/api/sessions/{KEY}/history?limit=1000").json()["events"]
        return [e["author"] for e in events if e["kind"] == "message"]

    def stop(self, sig: int = signal.SIGINT) -> None:
        self.http.close()
        self.proc.send_signal(sig)
        self.proc.wait(60)


def until(check: object, tries: int = 600) -> None:
    for _ in range(tries):
        if check():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("never happened")


def test_a_run_cut_off_by_a_kill_is_finished_when_the_server_starts_again(
    tmp_path: Path, project: Path, desk: Callable[..., str]
) -> None:
    # The conftest's project (employees, a scenario written by `desk`), with the SOPs too.
    shutil.copytree(ROOT / "sop_library", project / "sop_library")
    assert desk("enqueue", delay=1.0) == "desk-enqueue"
    data = tmp_path / "data"
    server = Serve(project, data)
    try:
        assert server.http.put("/api/rooms/r1", json={"scenario": "desk-enqueue"}).is_success
        until(lambda: not server.http.get(f"/api/sessions/{KEY}/status").json()["busy"])
        body = {"text": "@pm @engineer @designer q0", "author": "alice", "message_id": "q0"}
        accepted = server.http.post(f"/api/sessions/{KEY}/messages", json={**body, "wait": False})
        assert accepted.status_code == 202
        until(lambda: server.said()[-1:] == ["pm"])  # pm answered; engineer is thinking
    finally:
        server.stop(signal.SIGKILL)
    server = Serve(project, data)
    try:
        until(lambda: server.said() == ["alice", "pm", "engineer", "designer"])
        again = server.http.post(f"/api/sessions/{KEY}/messages", json=body).json()
        assert again["duplicate"] and again["status"] == "done"
        said = [e["author"] for e in again["events"] if e["kind"] == "message"]
        assert said == ["alice", "pm", "engineer", "designer"]
    finally:
        server.stop()
