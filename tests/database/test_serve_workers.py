"""`staffroom serve --workers N`: N replica processes on one port, restarted when one dies,
drained on SIGTERM; refused without a database."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from cli_in_process import Cli
from cli_process import process_env, staffroom_argv
from paths import ROOT
from serve_process import ServeProcess, wait_until


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text(encoding="utf-8")
    return [int(p) for p in text.split()]


def test_two_workers_share_the_port_and_a_dead_one_is_replaced(tmp_path: Path, pg_url: str) -> None:
    env = {"STAFFROOM_DATABASE_URL": pg_url}
    server = ServeProcess(
        tmp_path / "data", tmp_path / "serve.log", ["--no-auth", "--workers", "2"], env
    )
    with server:
        assert server.proc is not None
        workers = wait_until(
            lambda: len(children(server.proc.pid)) == 2 and children(server.proc.pid), "2 workers"
        )
        with server.client() as client:
            opened = client.put("/api/rooms/w1", json={"scenario": "escalation"})
            assert opened.status_code == 200, opened.text
        os.kill(workers[0], signal.SIGKILL)
        wait_until(
            lambda: (now := children(server.proc.pid)) and len(now) == 2 and workers[0] not in now,
            "the dead worker replaced",
        )
        with server.client() as client:
            status = client.get("/api/sessions/room:w1/status")
            assert status.status_code == 200 and "lease" in status.json(), status.text
        code = server.stop(signal.SIGTERM)
    assert code == 0, server.log()


def test_a_stop_while_the_workers_start_stops_every_one(tmp_path: Path, pg_url: str) -> None:
    # SIGTERM the moment the first worker is forked: the supervisor is still starting them (a
    # worker it had not yet listed was once never told to stop: the stop waited a minute).
    argv = staffroom_argv("serve", "--port", "0", "--no-auth", "--workers", "2")
    env = process_env({"STAFFROOM_DATABASE_URL": pg_url})
    argv += ["--data-dir", str(tmp_path / "data")]
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert "serving on" in proc.stdout.readline()  # printed before the workers start
        while not children(proc.pid) and proc.poll() is None:
            pass  # no sleep: the window is a fork and an exec long
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:  # a failed stop: its workers would outlive it
            for pid in children(proc.pid):
                os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.wait()


def test_workers_without_a_database_are_refused_with_the_fix(cli: Cli) -> None:
    result = cli("serve", "--no-auth", "--workers", "2", env={"STAFFROOM_DATABASE_URL": ""})
    said = result.out + result.err
    assert result.code == 2
    assert "--workers 2 needs a database" in said and "--database" in said
