"""``staffroom doctor`` shows each scheduler's heartbeat (stalled ones stand out, a stopped
process on this machine says so) and whether schedules.yaml loads, in English and Chinese;
on a folder no scheduler ever ran on it says so and creates no ledger."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from backend import backend_database
from cli_in_process import Cli
from paths import ROOT

from framework import Settings
from framework.schedules.fire_store import open_fire_store
from framework.stores import Stores

HOST = socket.gethostname()


async def _beat(data: Path, beats: list[tuple[str, str, int, datetime]]) -> None:
    """Write heartbeats into the folder's fire ledger as schedulers would."""
    settings = Settings(data_dir=data, project_dir=ROOT, database=backend_database())
    async with await Stores.open(settings=settings) as stores:
        store = await open_fire_store(data, await stores.database())
        try:
            for owner, host, pid, at in beats:
                await store.beat(owner, now=at, host=host, pid=pid)
        finally:
            await store.close()


def _gone_pid() -> int:
    """The pid of a process of this machine that has ended."""
    ended = subprocess.Popen(["true"])
    ended.wait()
    return ended.pid


def test_doctor_shows_live_stalled_and_stopped_schedulers(cli: Cli, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert cli("run", "tech-article", "--room", "r1", data=data).code == 0
    now = datetime.now(UTC)
    asyncio.run(
        _beat(
            data,
            [
                ("live", HOST, os.getpid(), now),
                ("hung", "other-host", 4242, now - timedelta(minutes=10)),
                ("stopped", HOST, _gone_pid(), now - timedelta(hours=3)),
            ],
        )
    )

    looked = cli("doctor", data=data)
    assert looked.code == 0, looked.out + looked.err
    lines = [line for line in looked.out.splitlines() if "last beat" in line]
    assert len(lines) == 3, looked.out
    live = next(line for line in lines if f"{HOST}:{os.getpid()}:" in line)
    assert "stalled" not in live and "stopped" not in live
    hung = next(line for line in lines if "other-host:4242" in line)
    assert "(10 min ago): stalled (no beat for over 60 s" in hung
    stopped = next(line for line in lines if "(3 h ago)" in line)
    assert "stopped (its process is gone)" in stopped
    assert "schedules.yaml: none (no schedules)" in looked.out
    assert looked.out.rstrip().endswith("no problems found")  # the verdict is the folder's

    chinese = cli("doctor", data=data, env={"STAFFROOM_LANGUAGE": "zh"})
    assert "调度器 other-host:4242：最后心跳" in chinese.out
    assert "已停滞（超过 60 秒没有心跳" in chinese.out


def test_doctor_on_a_folder_without_schedulers_and_a_broken_schedules_file(
    cli: Cli, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    project = tmp_path / "project"
    for folder in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / folder, project / folder)
    assert (
        cli("run", "tech-article", "--room", "r1", "--project", str(project), data=data).code == 0
    )
    (project / "schedules.yaml").write_text(
        'schedules:\n  standup:\n    cron: "99 9 * * *"\n    start: {dm: {employee: pm}}\n',
        encoding="utf-8",
    )

    looked = cli("doctor", "--project", str(project), data=data)
    assert looked.code == 0, looked.out + looked.err
    assert "schedulers: none has run on this data folder" in looked.out
    assert "schedules.yaml does not load" in looked.out and "cron" in looked.out
    assert not (data / "schedules.sqlite").exists(), "the doctor looks, it creates nothing"

    (project / "schedules.yaml").write_text(
        'schedules:\n  standup:\n    cron: "30 9 * * *"\n'
        "    start: {dm: {employee: pm, user: lead, message: hi}}\n",
        encoding="utf-8",
    )
    assert (
        "schedules.yaml: valid, 1 schedule(s)"
        in cli("doctor", "--project", str(project), data=data).out
    )
