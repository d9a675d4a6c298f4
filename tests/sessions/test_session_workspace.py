"""Workspace: paths stay inside the root; writes are atomic."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from framework.errors import WorkspaceEscapeError
from framework.sessions import Workspace


def test_write_read_list(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    assert ws.list_files() == [] and not ws.root.exists()  # created lazily
    written = ws.write_text("drafts/草稿.md", "第一行\nsecond line\n")
    assert written == (tmp_path / "ws" / "drafts" / "草稿.md").resolve()
    ws.write_text("notes.txt", "v1")
    ws.write_text("notes.txt", "v2")  # replaced atomically
    assert ws.read_text("notes.txt") == "v2"
    assert ws.read_text("drafts/草稿.md", offset=1, limit=3) == "一行\n"
    assert ws.read_text("./drafts/草稿.md", offset=4) == "second line\n"
    assert ws.list_files() == ["drafts/草稿.md", "notes.txt"]  # no temp files left behind
    assert oct(written.stat().st_mode & 0o777) == oct(0o644)
    with pytest.raises(FileNotFoundError):
        ws.read_text("missing.txt")


@pytest.mark.parametrize("bad", ["../outside.txt", "a/../../outside.txt", "a/..", ".."])
def test_dotdot_is_refused(tmp_path: Path, bad: str) -> None:
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(WorkspaceEscapeError) as caught:
        ws.write_text(bad, "x")
    assert repr(bad) in str(caught.value) and "Fix:" in str(caught.value)
    assert not (tmp_path / "outside.txt").exists()


@pytest.mark.parametrize("bad", ["/etc/passwd", "\\\\server\\share\\x", "C:\\Windows\\x.txt"])
def test_absolute_path_is_refused(tmp_path: Path, bad: str) -> None:
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(WorkspaceEscapeError, match="absolute"):
        ws.resolve(bad)
    with pytest.raises(WorkspaceEscapeError):
        ws.read_text(bad)


def test_symlink_pointing_outside_is_refused(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.write_text("inside.txt", "ok")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not read")
    os.symlink(secret, ws.root / "leak.txt")
    os.symlink(tmp_path, ws.root / "up")
    for rel in ("leak.txt", "up/secret.txt", "up/new.txt"):
        with pytest.raises(WorkspaceEscapeError, match="symlink"):
            ws.read_text(rel) if rel != "up/new.txt" else ws.write_text(rel, "x")
    assert not (tmp_path / "new.txt").exists()
    assert ws.list_files() == ["inside.txt"]  # escaping links are not listed either


def test_symlink_inside_is_allowed(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    ws.write_text("real/data.txt", "shared")
    os.symlink(ws.root / "real" / "data.txt", ws.root / "alias.txt")
    os.symlink("real", ws.root / "linkdir")  # relative link to a folder inside
    assert ws.read_text("alias.txt") == "shared"
    assert ws.read_text("linkdir/data.txt") == "shared"
    ws.write_text("alias.txt", "updated through the link")
    assert (ws.root / "real" / "data.txt").read_text() == "updated through the link"
    assert (ws.root / "alias.txt").is_symlink()  # the link itself is kept
    assert ws.list_files() == ["alias.txt", "real/data.txt"]
