"""``Stores.open``: a data folder's stores for the reading and admin commands, without the
project's models, cards or checkpoints, and usable on a folder this user cannot write to;
the ``Staffroom`` holds the same object."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from paths import ROOT

from framework.data_folder import DataFolder
from framework.errors import InputError
from framework.sessions.events import EventKind, make_event
from framework.sessions.keys import SessionKey
from framework.staffroom import Staffroom
from framework.stores import Stores

# $0 is the folder to mount read-only, "$@" the command to run under it (as root, where
# permissions are not enforced, a private mount namespace makes the folder read-only).
_MOUNT_RO = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
_READER = textwrap.dedent(
    """
    import asyncio, sys
    from framework.errors import StorageError
    from framework.sessions.keys import SessionKey
    from framework.stores import Stores

    async def main(data: str, project: str) -> None:
        async with await Stores.open(data, project_dir=project) as stores:
            print("writable", stores.writable)
            print("sops", await (await stores.sops()).store.sop_ids())
            log = stores.sessions.log(SessionKey.parse("room:r1"))
            print("events", [e.text for e in log.read_all()])
            print("memory", stores.memory.memory("pm", "alice").read().sections["facts"])
        try:
            await Stores.open(data, project_dir=project, writes=True, command="sop approve")
        except StorageError as exc:
            print("refused", exc)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def _project(tmp_path: Path) -> Path:
    """A project whose SOP cards are fine but whose models.yaml does not load."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "sop_library", project / "sop_library")
    (project / "models.yaml").write_text("local: [not, a, model]\n", encoding="utf-8")
    return project


async def test_stores_open_without_models_cards_or_checkpoints(tmp_path: Path) -> None:
    project, data = _project(tmp_path), tmp_path / "data"
    with pytest.raises(InputError, match=r"models\.yaml"):
        await Staffroom.open(data, project_dir=project)  # the full open loads the project
    async with await Stores.open(data, project_dir=project) as stores:
        assert stores.writable and stores.folder == DataFolder(data)
        assert not data.exists(), "nothing is opened before it is used"
        service = await stores.sops()
        assert await stores.sops() is service
        assert await service.store.sop_ids() == [
            "escalation",
            "tech-article",
        ]  # cards imported, as always
        key = SessionKey.parse("room:r1")
        stores.sessions.log(key).append(make_event(str(key), EventKind.MESSAGE, "ann", "hi"))
    assert sorted(p.name for p in data.iterdir()) == ["sessions", "sops.sqlite", "stores.json"]
    assert not stores.folder.checkpoints.exists()
    async with await Stores.open(tmp_path / "other", project_dir=project) as bare:
        assert await (await bare.sops(import_cards=False)).store.sop_ids() == []


def test_stores_read_a_read_only_folder_and_refuse_writes(tmp_path: Path) -> None:
    project, data = _project(tmp_path), tmp_path / "data"
    _fill(data, project)
    cmd = [sys.executable, "-c", _READER, str(data), str(project)]
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [data, *data.rglob("*")]}
        for p in modes:
            p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
        try:
            done = _run(cmd)
        finally:
            for p, mode in modes.items():
                p.chmod(mode)
    else:
        unshare = shutil.which("unshare")
        probe = [unshare or "unshare", "-m", "sh", "-c", _MOUNT_RO, str(data)]
        if unshare is None or _run([*probe, "true"]).returncode != 0:
            pytest.skip("root without mount namespaces: cannot make a read-only folder")
        done = _run([*probe, *cmd])
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout.splitlines()
    assert out[:4] == [
        "writable False",
        "sops ['escalation', 'tech-article']",
        "events ['hi']",
        "memory ['alice writes in English']",
    ]
    assert out[4].startswith("refused the data folder") and "read-only" in out[4]
    assert "`staffroom sop approve` writes to it" in out[4]


async def test_a_staffroom_holds_the_same_stores(tmp_path: Path) -> None:
    async with await Staffroom.open(tmp_path / "data") as staff:
        stores = staff.stores
        assert stores.writable and stores.folder.checkpoints.is_file()
        assert staff.sessions is stores.sessions and staff.memory is stores.memory
        assert staff.sops is await stores.sops() and staff.knowledge is stores.knowledge()
        assert await stores.checkpoints() is await stores.checkpoints(), "opened once"


async def test_staffroom_admin_still_opens_the_stores_with_a_warning(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match=r"Stores\.open"):
        opened = await Staffroom.admin(tmp_path / "data", project_dir=_project(tmp_path))
    async with opened as stores:
        assert isinstance(stores, Stores)
        assert await (await stores.sops()).store.sop_ids() == ["escalation", "tech-article"]


def _fill(data: Path, project: Path) -> None:
    """A session log, an SOP store and a MEMORY.md, written as a writable folder."""

    async def fill() -> None:
        async with await Stores.open(data, project_dir=project) as stores:
            await stores.sops()
            key = SessionKey.parse("room:r1")
            stores.sessions.log(key).append(make_event(str(key), EventKind.MESSAGE, "ann", "hi"))
            memory = stores.memory.memory("pm", "alice")
            memory.path.parent.mkdir(parents=True)
            memory.path.write_text("# 关键事实\nalice writes in English\n", encoding="utf-8")

    asyncio.run(fill())


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
