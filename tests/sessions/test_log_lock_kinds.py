"""One log, one lock kind: a writer of the other kind is refused and writes nothing.

flock and filelock do not exclude each other, so writers mixing them on one log used to store
events twice (4 + 4 writers: 3 duplicate ids, no error). Real processes, as in
``test_jsonl_concurrency.py``.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from pathlib import Path
from subprocess import Popen

import pytest
from cli_in_process import CliResult
from cli_process import staffroom_process
from log_writers import ready_writers, seqs_by_author

from framework import Settings
from framework.errors import InputError, StorageError
from framework.sessions import EventKind, JsonlLog, make_event

HELPER = Path(__file__).with_name("lock_kind_writer_proc.py")
REFUSED = 3  # the helper's exit status for a StorageError


def writers(
    log: Path, go: Path, plan: dict[str, tuple[str, int]]
) -> AbstractContextManager[dict[str, Popen[str]]]:
    """One helper process per name (lock kind, event count); each has opened the log."""
    argvs = {
        name: [sys.executable, str(HELPER), str(log), name, str(count), str(go), lock]
        for name, (lock, count) in plan.items()
    }
    return ready_writers(argvs, stderr=True)


def write(log: Path, lock: str, name: str, count: int, tmp_path: Path) -> tuple[int, str]:
    """Run one writer to its end; its exit status and stderr."""
    go = tmp_path / f"go-{name}"
    go.touch()
    with writers(log, go, {name: (lock, count)}) as procs:
        proc = procs[name]
        code = proc.wait(timeout=120)
        assert proc.stderr is not None
        return code, proc.stderr.read()


def marker(log: Path) -> Path:
    return log.with_name(log.name + ".lock-kind")


def test_a_filelock_writer_on_a_flock_log_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "sessions" / "room:mixed.jsonl"
    assert write(log, "flock", "first", 200, tmp_path) == (0, "")
    assert marker(log).read_text() == "flock\n"
    before = log.read_bytes()

    code, err = write(log, "filelock", "second", 50, tmp_path)
    assert code == REFUSED
    assert str(log) in err and "'flock'" in err and "'filelock'" in err
    assert "STAFFROOM_LOCK=flock" in err and "Settings.lock='flock'" in err
    assert "Traceback" not in err
    assert log.read_bytes() == before
    assert not Path(f"{log}.lock").exists()  # it never even took its lock
    assert marker(log).read_text() == "flock\n"
    # The kind the log uses still writes.
    assert write(log, "flock", "third", 10, tmp_path) == (0, "")
    assert seqs_by_author(log) == {"first": list(range(200)), "third": list(range(10))}


def test_four_flock_and_four_filelock_writers_started_together(tmp_path: Path) -> None:
    log, go = tmp_path / "room:mixed.jsonl", tmp_path / "go"
    plan = {f"f{i}": ("flock", 1000) for i in range(4)}
    plan.update({f"l{i}": ("filelock", 1000) for i in range(4)})
    with writers(log, go, plan) as procs:
        go.touch()
        codes = {name: proc.wait(timeout=120) for name, proc in procs.items()}
        errors = {name: proc.stderr.read() for name, proc in procs.items() if proc.stderr}

    # Whichever kind wrote first owns the log; every writer of the other kind was refused.
    winner = marker(log).read_text().strip()
    assert winner in ("flock", "filelock")
    won = {name for name, (lock, _count) in plan.items() if lock == winner}
    assert {name for name, code in codes.items() if code == 0} == won
    assert all(codes[name] == REFUSED and str(log) in errors[name] for name in plan.keys() - won)
    events = JsonlLog(log).read_all(strict=True)
    assert len(events) == len({event.id for event in events}) == 4000  # no duplicate id
    assert seqs_by_author(log) == {name: list(range(1000)) for name in won}


def test_a_log_from_before_the_marker_takes_the_kind_of_its_next_writer(tmp_path: Path) -> None:
    log = tmp_path / "room:old.jsonl"
    old = make_event("room:old", EventKind.MESSAGE, "alice", "written before markers")
    log.write_text(old.to_json() + "\n", encoding="utf-8")

    assert write(log, "filelock", "adopter", 20, tmp_path) == (0, "")
    assert marker(log).read_text() == "filelock\n"
    before = log.read_bytes()
    code, err = write(log, "flock", "late", 5, tmp_path)
    assert code == REFUSED and "STAFFROOM_LOCK=filelock" in err
    assert log.read_bytes() == before
    assert JsonlLog(log).read_all(strict=True)[0] == old


def test_plain_reads_need_no_agreement_and_a_writer_is_refused_early(tmp_path: Path) -> None:
    log = tmp_path / "room:read.jsonl"
    event = make_event("room:read", EventKind.MESSAGE, "alice", "hello")
    assert JsonlLog(log, lock="flock").append(event)
    other = JsonlLog(log, lock="filelock")  # e.g. `staffroom history` with another setting
    assert other.read_all() == [event] and other.tail(1) == [event]
    # has() is what a writer asks before it writes (a room resuming): refused there already.
    with pytest.raises(StorageError, match="'flock' lock"):
        other.has(event.id)
    with pytest.raises(StorageError, match="'flock' lock"):
        other.append(make_event("room:read", EventKind.MESSAGE, "bob", "hi"))


def test_has_on_a_log_without_marker_records_nothing(tmp_path: Path) -> None:
    log = tmp_path / "room:legacy.jsonl"
    event = make_event("room:legacy", EventKind.MESSAGE, "alice", "hello")
    log.write_text(event.to_json() + "\n", encoding="utf-8")
    assert JsonlLog(log, lock="filelock").has(event.id)
    assert not marker(log).exists()  # only a write adopts a kind
    assert JsonlLog(log, lock="flock").append(
        make_event("room:legacy", EventKind.MESSAGE, "b", "x")
    )
    assert marker(log).read_text() == "flock\n"


def test_a_broken_marker_is_named_with_its_fix(tmp_path: Path) -> None:
    log = tmp_path / "room:odd.jsonl"
    marker(log).write_text("fcntl\n")
    with pytest.raises(StorageError) as refused:
        JsonlLog(log).append(make_event("room:odd", EventKind.MESSAGE, "alice", "hi"))
    assert str(marker(log)) in str(refused.value) and "'fcntl'" in str(refused.value)
    assert "delete it while no process writes the log" in str(refused.value)
    assert not log.exists()


def test_staffroom_lock_sets_the_kind_and_a_bad_one_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STAFFROOM_LOCK", "filelock")
    assert Settings.from_env().lock == "filelock"
    monkeypatch.setenv("STAFFROOM_LOCK", "fcntl")
    with pytest.raises(InputError) as bad:
        Settings.from_env()
    assert bad.value.field == "STAFFROOM_LOCK" and "flock" in (bad.value.fix or "")


def test_the_cli_refuses_a_dm_with_the_other_lock_kind(tmp_path: Path) -> None:
    def dm(lock: str) -> CliResult:
        env = {"STAFFROOM_LOCK": lock}
        return staffroom_process(
            "dm", "pm", "--user", "alice", env=env, stdin="你好\n", data=tmp_path
        )

    assert dm("flock").code == 0
    log = tmp_path / "sessions" / "dm:alice@pm.jsonl"
    before = log.read_bytes()
    refused = dm("filelock")
    assert refused.code == 2 and "Traceback" not in refused.err
    assert "STAFFROOM_LOCK=flock" in refused.err
    assert log.read_bytes() == before
