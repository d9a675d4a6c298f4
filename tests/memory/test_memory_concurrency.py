"""Four processes adding to one MEMORY.md at once lose nothing (the file lock serialises them)."""

from __future__ import annotations

import hashlib
from multiprocessing.synchronize import Event
from pathlib import Path

from at_once import run_at_once

from framework.memory.memory_file import MemoryFile

WORKERS, PER_WORKER, CAP = 4, 50, 100_000


def entry(worker: int, n: int) -> str:
    # A hash makes every pair of entries dissimilar, so no add is taken for a near-duplicate.
    return "note " + hashlib.sha256(f"{worker}-{n}".encode()).hexdigest()[:16]


def add_entries(path: str, worker: int, go: Event) -> None:
    memory = MemoryFile(Path(path), cap=CAP)
    go.wait()
    for n in range(PER_WORKER):
        assert memory.add("facts", entry(worker, n)).action == "added"


def test_four_processes_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory" / "pm" / "alice" / "MEMORY.md"
    run_at_once(add_entries, str(path), WORKERS)

    facts = MemoryFile(path, cap=CAP).read().sections["facts"]
    expected = {entry(w, n) for w in range(WORKERS) for n in range(PER_WORKER)}
    assert len(facts) == len(expected) == WORKERS * PER_WORKER
    assert set(facts) == expected
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "MEMORY.md",
        "MEMORY.md.lock",
        "facts.json",
    ]
