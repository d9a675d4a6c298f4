"""With a database, the writers of MEMORY.md and topic files exclude each other there, not by
file locks: processes on two "mounts" of one folder lose nothing while the ``.lock`` files
could not even be made, a killed holder blocks no one, and a stuck one is named."""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import os
import signal
import time
from multiprocessing.synchronize import Event
from pathlib import Path

import pytest
from at_once import run_at_once
from paths import ROOT

from framework.data_folder import DataFolder
from framework.database.file_locks import DatabaseFileLocks
from framework.errors import StorageError
from framework.file_locks import LocalFileLocks
from framework.knowledge.topics import TopicStore
from framework.memory.memory_file import MemoryFile
from framework.settings import Settings
from framework.stores import Stores

WORKERS, PER_WORKER = 2, 40
TOPIC = "发布流程"


def settings(data_dir: str | Path, url: str | None) -> Settings:
    return Settings(data_dir=Path(data_dir), project_dir=ROOT, allow_network=False, database=url)


def entry(worker: int, n: int) -> str:
    # A hash makes every pair of entries dissimilar, so no add is taken for a near-duplicate.
    return "note " + hashlib.sha256(f"{worker}-{n}".encode()).hexdigest()[:16]


def write_entries(arg: str, worker: int, go: Event) -> None:
    """One replica: its own stores on its own mount of the folder, adding through the API."""
    url, mounts, kind = json.loads(arg)

    async def run() -> None:
        stores = await Stores.open(settings=settings(mounts[worker], url), writes=True)
        try:
            go.wait()
            for n in range(PER_WORKER):
                if kind == "memory":
                    change = stores.memory.memory("pm", "alice").add("facts", entry(worker, n))
                    assert change.action == "added"
                else:
                    topics = stores.knowledge().topics("pm")
                    assert topics.update(TOPIC, "learning", add=[entry(worker, n)]).changed
        finally:
            await stores.close()

    asyncio.run(run())


@pytest.mark.parametrize("kind", ["memory", "topic"])
def test_two_processes_on_two_mounts_lose_nothing_without_file_locks(
    pg_url: str, tmp_path: Path, kind: str
) -> None:
    data, mount = tmp_path / "data", tmp_path / "mount"
    folder = DataFolder(data)
    target = folder.memory_file("pm", "alice") if kind == "memory" else folder.topics_dir("pm")
    target = target if kind == "memory" else target / ".topics"
    # A folder where the file lock would go: a writer relying on `<file>.lock` fails at once.
    blocker = Path(f"{target}.lock")
    blocker.mkdir(parents=True)
    with pytest.raises(StorageError, match="cannot lock"), LocalFileLocks().hold(target):
        pass
    mount.symlink_to(data)  # the second replica reaches the folder by another path

    run_at_once(write_entries, json.dumps([pg_url, [str(data), str(mount)], kind]), WORKERS)

    if kind == "memory":
        written = MemoryFile(target).read().sections["facts"]
    else:
        written = list(TopicStore(folder.topics_dir("pm")).show(TOPIC).entries)
    expected = {entry(w, n) for w in range(WORKERS) for n in range(PER_WORKER)}
    assert len(written) == len(expected) and set(written) == expected, "a change was lost"
    assert [p for p in data.rglob("*.lock") if p != blocker] == [], "a file lock was taken"


def hold_memory_forever(arg: str, held: Event) -> None:
    """A writer stopped inside MEMORY.md's read-modify-write (its lock held), until killed."""
    url, data = json.loads(arg)

    def stuck(_old: str, _new: str) -> float:
        held.set()
        time.sleep(3600)
        return 0.0

    stores = Stores(settings(data, url), writable=True)
    path = stores.memory.memory_path("pm", "alice")
    MemoryFile(path, locks=stores.file_locks, similarity=stuck).add("facts", "never written")


async def test_a_stuck_holder_is_named_and_a_killed_one_blocks_no_one(
    pg_url: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    stores = await Stores.open(settings=settings(data, pg_url), writes=True)
    memory = stores.memory.memory("pm", "alice")
    memory.add("facts", "first fact")  # the stuck writer compares against it, under the lock
    ctx = multiprocessing.get_context("spawn")
    held = ctx.Event()
    holder = ctx.Process(target=hold_memory_forever, args=(json.dumps([pg_url, str(data)]), held))
    holder.start()
    try:
        assert await asyncio.to_thread(held.wait, 60), "the holder never took the lock"
        impatient = DatabaseFileLocks(pg_url, root=data, timeout=0.5)
        with pytest.raises(StorageError) as stuck:
            MemoryFile(memory.path, locks=impatient).add("facts", "second fact")
        impatient.close()
        said = str(stuck.value)
        assert f"{memory.path} stayed locked for 0.5 s" in said
        assert f":{holder.pid}:" in said, "the holder's replica name (host:pid:…) is given"
        assert "(memory/pm/alice/MEMORY.md)" in said and "stop it" in said

        os.kill(holder.pid, signal.SIGKILL)
        started = time.monotonic()
        change = await asyncio.to_thread(memory.add, "facts", "third fact")  # waits up to 60 s
        assert change.action == "added"
        assert time.monotonic() - started < 10, "the killed holder's lock outlived it"
    finally:
        holder.kill()
        holder.join(10)
        await stores.close()
    assert memory.read().sections["facts"] == ["first fact", "third fact"]


async def test_a_writer_without_the_database_is_refused_on_its_folder(
    pg_url: str, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    async with await Stores.open(settings=settings(data, pg_url), writes=True) as stores:
        assert await stores.database() is not None  # the folder now records its database
        stores.memory.memory("pm", "alice").add("facts", "first fact")
    async with await Stores.open(settings=settings(data, None), writes=True) as alone:
        with pytest.raises(StorageError, match="keeps its stores in the database") as refused:
            alone.memory.memory("pm", "alice").add("facts", "second fact")
    assert "MEMORY.md take its lock there" in str(refused.value)
    assert "--database" in str(refused.value)
    assert not list(data.rglob("*.lock")), "the refused writer took no file lock either"
