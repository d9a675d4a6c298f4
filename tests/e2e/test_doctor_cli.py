"""Lost and damaged state files from the terminal: refused with the fix, then ``doctor``.

Real subprocesses on a real data folder: a deleted ``checkpoints.sqlite`` must not make a
waiting room run its SOP again; a deleted, emptied or overwritten store is reported, never
silently recreated; ``staffroom doctor --repair`` brings the folder back without losing what
the logs hold. Damage inside a store (found at the first query that reaches it) is checked
in-process with the ``cli`` fixture: no process matters there, and it takes a tenth the time.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from cli_in_process import Cli, CliResult
from cli_process import staffroom_process
from paths import ROOT

SCRIPT = ROOT / "scenarios" / "tech_article.script.txt"


def home(data: Path) -> dict[str, str]:
    """STAFFROOM_HOME, not --data-dir: every command reads it, and the hints it prints carry no
    --data-dir (the repair hint is checked as written)."""
    return {"STAFFROOM_HOME": str(data)}


def kinds(data: Path, room: str) -> Counter[str]:
    lines = (data / "sessions" / f"room:{room}.jsonl").read_text("utf-8").splitlines()
    return Counter(json.loads(line)["kind"] for line in lines)


def waiting_room(data: Path, room: str = "r1") -> None:
    assert staffroom_process("run", "tech-article", "--room", room, env=home(data)).code == 0


def finish_room(data: Path, room: str = "r1") -> CliResult:
    """Run the room to the end of its SOP with the sample script (a resume after a repair)."""
    args = ("run", "tech-article", "--room", room, "--script", str(SCRIPT))
    return staffroom_process(*args, env=home(data))


def test_deleted_checkpoints_are_refused_then_rebuilt_by_doctor(tmp_path: Path) -> None:
    waiting_room(tmp_path)
    for part in tmp_path.glob("checkpoints.sqlite*"):
        part.unlink()

    refused = staffroom_process(
        "run", "tech-article", "--room", "r1", "--script", str(SCRIPT), env=home(tmp_path)
    )
    assert refused.code == 2 and "Traceback" not in refused.err
    assert "checkpoints.sqlite is missing" in refused.err
    assert "staffroom doctor --repair" in refused.err
    assert kinds(tmp_path, "r1")["sop_step"] == 2, "nothing may run while the store is lost"

    checked = staffroom_process("doctor", env=home(tmp_path))
    assert checked.code == 1 and "checkpoints.sqlite: missing" in checked.out

    fixed = staffroom_process("doctor", "--repair", env=home(tmp_path))
    assert fixed.code == 0, fixed.out + fixed.err
    assert "room:r1: rebuilt from its log, waiting for people again" in fixed.out
    assert fixed.out.rstrip().endswith("no problems found")

    done = finish_room(tmp_path)
    assert done.code == 0 and "ended: sop_complete" in done.out
    counts = kinds(tmp_path, "r1")
    assert counts["sop_step"] == 4 and counts["outcome"] == 1 and counts["wait"] == 1


@pytest.mark.parametrize("damage", ["delete", "empty", "random"])
def test_a_lost_or_damaged_sop_store_is_reported_not_recreated(tmp_path: Path, damage: str) -> None:
    waiting_room(tmp_path)
    store = tmp_path / "sops.sqlite"
    for part in tmp_path.glob("sops.sqlite-*"):
        part.unlink()
    if damage == "delete":
        store.unlink()
    elif damage == "empty":
        store.write_bytes(b"")
    else:
        store.write_bytes(bytes(range(256)) * 64)

    for args in (("sop", "list"), ("run", "tech-article", "--room", "r2")):
        refused = staffroom_process(*args, env=home(tmp_path))
        assert refused.code == 2, refused.out
        assert "Traceback" not in refused.err
        assert "sops.sqlite" in refused.err and "doctor --repair" in refused.err
    assert not (tmp_path / "sessions" / "room:r2.jsonl").exists()
    if damage == "delete":
        assert not store.exists(), "a lost store must not come back empty without a word"

    fixed = staffroom_process("doctor", "--repair", env=home(tmp_path))
    assert fixed.code == 0, fixed.out + fixed.err
    if damage == "random":
        kept = list(tmp_path.glob("sops.sqlite.broken-*"))
        assert kept and kept[0].read_bytes() == bytes(range(256)) * 64, "moved aside, kept"
    listed = staffroom_process("sop", "list", env=home(tmp_path))
    assert listed.code == 0 and "tech-article" in listed.out  # library imported again


def test_damaged_checkpoints_are_moved_aside_and_rooms_rebuilt(tmp_path: Path) -> None:
    waiting_room(tmp_path)
    for part in tmp_path.glob("checkpoints.sqlite-*"):
        part.unlink()
    (tmp_path / "checkpoints.sqlite").write_bytes(b"not a database, just junk" * 100)

    refused = staffroom_process("run", "tech-article", "--room", "r1", env=home(tmp_path))
    assert refused.code == 2 and "Traceback" not in refused.err
    assert "checkpoints.sqlite" in refused.err

    fixed = staffroom_process("doctor", "--repair", env=home(tmp_path))
    assert fixed.code == 0, fixed.out
    assert "moved aside" in fixed.out and "room:r1: rebuilt" in fixed.out
    done = finish_room(tmp_path)
    assert done.code == 0 and kinds(tmp_path, "r1")["outcome"] == 1


def test_an_emptied_log_is_reported_and_doctor_resets_the_room(tmp_path: Path) -> None:
    waiting_room(tmp_path)
    (tmp_path / "sessions" / "room:r1.jsonl").write_bytes(b"")

    refused = staffroom_process("run", "tech-article", "--room", "r1", env=home(tmp_path))
    assert refused.code == 2 and "lost events its checkpoint knows" in refused.err
    checked = staffroom_process("doctor", env=home(tmp_path))
    assert checked.code == 1 and "room:r1" in checked.out
    fixed = staffroom_process("doctor", "--repair", env=home(tmp_path))
    assert fixed.code == 0 and "enters afresh" in fixed.out
    again = staffroom_process("run", "tech-article", "--room", "r1", env=home(tmp_path))
    assert again.code == 0 and kinds(tmp_path, "r1")["plan"] == 1


def _overwrite_past_the_first_page(store: Path) -> None:
    # What the broken-state run did: 8 KB of random bytes at offset 4096. The schema page is
    # whole, so the store opens; the damage surfaces at whichever query reaches those pages.
    assert store.stat().st_size > 4096 + 8192, "the damage must land inside the file"
    with store.open("r+b") as handle:
        handle.seek(4096)
        handle.write(random.Random(11).randbytes(8192))


# Every command that reads the damaged pages, for each store (each hit them in the
# broken-state run; the others never query those pages, or are doctor, which reports it).
DAMAGED_STORE_COMMANDS = {
    "sops.sqlite": [
        ("run", "tech-article", "--room", "new"),
        ("run", "tech-article", "--room", "r1"),
        ("dm", "pm", "--user", "alice"),
        ("close", "room:r1"),
        ("extract", "room:r1"),
        ("consolidate", "dm:alice@pm", "--force"),
        ("sop", "list"),
    ],
    "checkpoints.sqlite": [
        ("run", "tech-article", "--room", "new"),
        ("run", "tech-article", "--room", "r1"),
        ("dm", "pm", "--user", "alice"),
    ],
}


@pytest.mark.parametrize("name", sorted(DAMAGED_STORE_COMMANDS))
def test_random_bytes_inside_a_store_are_one_clear_error_in_every_command(
    tmp_path: Path, cli: Cli, name: str
) -> None:
    home = {"STAFFROOM_HOME": str(tmp_path)}
    assert cli("run", "tech-article", "--room", "r1", env=home).code == 0
    assert cli("dm", "pm", "--user", "alice", stdin="你好\n", env=home).code == 0
    for part in tmp_path.glob(f"{name}-*"):
        part.unlink()
    _overwrite_past_the_first_page(tmp_path / name)

    for args in DAMAGED_STORE_COMMANDS[name]:
        done = cli(*args, stdin="在吗\n", env=home)
        assert done.code == 2, (args, done.out[-2000:], done.err[-2000:])
        assert "Traceback" not in done.err + done.out, args
        (line,) = done.err.splitlines()  # one line: what, where, the ways out
        assert line.startswith(f"error: {tmp_path / name} is damaged"), (args, line)
        assert line.endswith("staffroom doctor --repair"), (args, line)

    if name == "sops.sqlite":  # validate checks scenarios against it: it says it cannot
        checked = cli("validate", "scenarios", env=home)
        assert checked.code == 1 and "Traceback" not in checked.err + checked.out
        assert f"✗ {tmp_path / name} is damaged" in checked.out
