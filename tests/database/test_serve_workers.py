"""`staffroom serve --workers N`: N replica processes on one port, restarted when one dies,
drained on SIGTERM; refused without a database."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from cli_in_process import Cli
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
        # The room's entry is written in the background; once it is, every worker knows it.
        wait_until((tmp_path / "data" / "sessions" / "room:w1.jsonl").exists, "the entry")
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


def test_workers_without_a_database_are_refused_with_the_fix(cli: Cli) -> None:
    result = cli("serve", "--no-auth", "--workers", "2", env={"STAFFROOM_DATABASE_URL": ""})
    said = result.out + result.err
    assert result.code == 2
    assert "--workers 2 needs a database" in said and "--database" in said
