"""A data folder this user cannot write to: read-only commands work, writing ones say why not.

As root, permissions are not enforced, so the folder is bind-mounted read-only in a private
mount namespace (``unshare -m``); where neither works, the test is skipped.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_process import staffroom_argv
from paths import ROOT

Run = Callable[..., subprocess.CompletedProcess[str]]
# $0 is the folder to mount read-only, "$@" the command to run under it.
_MOUNT_RO = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Run]]:
    """A data folder with a finished room in it, and a runner that sees it read-only."""
    data = tmp_path / "data"
    script = ROOT / "scenarios" / "tech_article.script.txt"
    args = ["run", "tech-article", "--room", "ro", "--script", str(script), "--data-dir"]
    made = _run(staffroom_argv(*args, str(data)))
    assert made.returncode == 0, made.stderr
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [data, *data.rglob("*")]}
        for p in modes:
            p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
        yield data, lambda *args: _run(staffroom_argv(*args))
        for p, mode in modes.items():
            p.chmod(mode)
        return
    unshare = shutil.which("unshare")
    probe = [unshare or "unshare", "-m", "sh", "-c", _MOUNT_RO, str(data), "true"]
    if unshare is None or _run(probe).returncode != 0:
        pytest.skip("root without mount namespaces: cannot make a read-only folder")
    yield data, lambda *args: _run([*probe[:-1], *staffroom_argv(*args)])


def test_reading_commands_work_on_a_read_only_data_folder(
    read_only: tuple[Path, Run],
) -> None:
    data, staffroom = read_only
    folder = ["--data-dir", str(data)]
    for args, expect in [
        (["sop", *folder, "list"], "tech-article"),
        (["sop", *folder, "show", "tech-article@1"], "tech-article@1"),
        (["sop", *folder, "metrics", "tech-article"], "published"),
        (["history", "room:ro", *folder], "sop_complete"),
        (["replay", "room:ro", *folder], "ran on tech-article@1"),
        (["memory", "pm", "--user", "author", *folder], "MEMORY.md"),
        (["validate", str(ROOT / "scenarios")], "valid"),
    ]:
        done = staffroom(*args)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        assert expect in done.stdout, (args, done.stdout[-2000:])


def test_writing_commands_refuse_a_read_only_data_folder_with_one_clear_line(
    read_only: tuple[Path, Run],
) -> None:
    data, staffroom = read_only
    folder = ["--data-dir", str(data)]
    for args in (
        ["run", "tech-article", "--room", "ro", *folder],
        ["sop", *folder, "approve", "tech-article@1", "--by", "ann"],
        ["memory", "pm", "--user", "author", "--share", "none", *folder],
    ):
        done = staffroom(*args)
        assert done.returncode == 2, (args, done.stdout[-2000:], done.stderr[-2000:])
        assert "read-only" in done.stderr and "Traceback" not in done.stderr
        assert "doctor --repair" not in done.stderr  # nothing is damaged: no repair to run
