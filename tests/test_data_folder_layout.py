"""The data folder's layout: every on-disk name comes from ``DataFolder``, names are checked.

The stores ask it for their paths, so what a Staffroom writes and what ``DataFolder`` says
must agree file for file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from framework.data_folder import CHECKPOINTS, SOPS, DataFolder
from framework.errors import InputError
from framework.memory.store import MemoryStore
from framework.sessions.keys import SessionKey
from framework.sessions.store import SessionStore
from framework.settings import Settings


def test_every_name_under_the_data_folder(tmp_path: Path) -> None:
    folder = DataFolder(tmp_path)
    room, dm = SessionKey.parse("room:launch-42"), SessionKey.parse("dm:alice@pm")
    assert folder.manifest == tmp_path / "stores.json"
    assert folder.checkpoints == folder.store(CHECKPOINTS) == tmp_path / "checkpoints.sqlite"
    assert folder.sops == folder.store(SOPS) == tmp_path / "sops.sqlite"
    assert folder.sessions_dir == tmp_path / "sessions"
    assert folder.session_log(room) == tmp_path / "sessions" / "room:launch-42.jsonl"
    assert folder.session_log("room:launch-42") == folder.session_log(room)  # str(key) works
    assert folder.workspace(room) == tmp_path / "workspaces" / "room:launch-42"
    assert folder.room_lock(room) == tmp_path / "locks" / "room:launch-42.lock"
    assert folder.memory_file("pm", "alice") == tmp_path / "memory" / "pm" / "alice" / "MEMORY.md"
    assert folder.shared_file("pm", "alice") == tmp_path / "memory" / "pm" / "alice" / "shared.json"
    assert folder.history_file(dm) == tmp_path / "history" / "dm:alice@pm" / "HISTORY.md"
    assert not tmp_path.joinpath("sessions").exists(), "path methods create nothing"


def test_the_stores_use_the_folder_layout(tmp_path: Path) -> None:
    folder = DataFolder(tmp_path)
    key = SessionKey.parse("room:r1")
    sessions = SessionStore(tmp_path)
    assert sessions.log_path(key) == folder.session_log(key)
    assert sessions.workspace(key).root == folder.workspace(key)
    memory = MemoryStore(Settings(data_dir=tmp_path))
    assert memory.memory_path("pm", "alice") == folder.memory_file("pm", "alice")
    assert memory.shared_path("pm", "alice") == folder.shared_file("pm", "alice")
    assert memory.history(key).path == folder.history_file(key)
    memory.share("pm", "alice", ["facts"])
    assert json.loads(folder.shared_file("pm", "alice").read_text("utf-8")) == ["facts"]


@pytest.mark.parametrize(
    ("employee", "user", "field"),
    [("pm", "../../sessions", "user"), ("..", "alice", "employee"), ("pm", "a/b", "user")],
)
def test_memory_names_are_checked_so_no_path_leaves_the_folder(
    tmp_path: Path, employee: str, user: str, field: str
) -> None:
    with pytest.raises(InputError) as caught:
        DataFolder(tmp_path).memory_file(employee, user)
    assert caught.value.field == field and caught.value.fix


@pytest.mark.parametrize("key", ["room:../x", "room:a/b", "../room:x", "room", "Room:x", "room:"])
def test_session_names_are_checked_too(tmp_path: Path, key: str) -> None:
    folder = DataFolder(tmp_path)
    for path_of in (folder.session_log, folder.workspace, folder.room_lock, folder.history_file):
        with pytest.raises(InputError) as caught:
            path_of(key)
        assert caught.value.field == "session"


def test_listings_find_what_is_on_disk(tmp_path: Path) -> None:
    folder = DataFolder(tmp_path)
    assert folder.session_names() == [] and folder.memory_files() == []
    folder.sessions_dir.mkdir()
    for name in ("room:a.jsonl", "dm:bob@pm.jsonl", "notes.txt"):
        (folder.sessions_dir / name).write_text("")
    assert sorted(folder.session_names()) == ["dm:bob@pm", "room:a"]
    for user in ("bob", "alice"):
        path = folder.memory_file("pm", user)
        path.parent.mkdir(parents=True)
        path.write_text("x", encoding="utf-8")
    assert folder.memory_files() == [
        folder.memory_file("pm", "alice"),
        folder.memory_file("pm", "bob"),
    ]


def test_set_aside_keeps_a_store_and_its_side_files_and_forgets_it(tmp_path: Path) -> None:
    folder = DataFolder(tmp_path)
    for suffix in ("", "-wal"):
        tmp_path.joinpath(SOPS + suffix).write_bytes(b"junk")
    folder.record(SOPS)
    assert SOPS in folder.recorded()
    moved = folder.set_aside(SOPS)
    assert [name.endswith("-wal") for name in moved] == [False, True]
    assert all(name.startswith(f"{SOPS}.broken-") for name in moved)
    assert all((tmp_path / name).read_bytes() == b"junk" for name in moved)
    assert not folder.sops.exists() and SOPS not in folder.recorded()
    assert folder.writable()


def test_each_machine_appends_its_webhook_failures_to_a_file_of_its_own(tmp_path: Path) -> None:
    # Appends from several machines to one file on a shared folder are not atomic; a host
    # name never makes a path outside the data folder.
    folder = DataFolder(tmp_path)
    a, b = folder.webhook_failures_of("node-a"), folder.webhook_failures_of("node-b.local")
    odd = folder.webhook_failures_of("../../etc/x")
    assert a != b and a.name == "webhook_failures.node-a.jsonl"
    assert {a.parent, b.parent, odd.parent} == {tmp_path}
    assert odd.name.startswith("webhook_failures.") and "/" not in odd.name
