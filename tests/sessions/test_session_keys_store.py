"""SessionKey parsing and validation; SessionStore layout."""

from __future__ import annotations

from pathlib import Path

import pytest

from framework.errors import InputError
from framework.sessions import Channel, EventKind, SessionKey, SessionStore, make_event


def test_parse_and_str() -> None:
    key = SessionKey.parse("room:launch-42")
    assert key == SessionKey(Channel.ROOM, "launch-42") and str(key) == "room:launch-42"
    assert SessionKey.parse("dm:alice").channel is Channel.DM
    assert str(SessionKey.parse("room:发布会_2026.v2@acme")) == "room:发布会_2026.v2@acme"
    assert SessionKey("dm", "bob").channel is Channel.DM  # type: ignore[arg-type]
    assert len({SessionKey.parse("dm:a"), SessionKey(Channel.DM, "a")}) == 1  # hashable


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("launch-42", "session"),
        ("chat:launch", "channel"),
        ("room:", "chat_id"),
        ("room:a/b", "chat_id"),
        ("room:a..b", "chat_id"),
        ("room:..", "chat_id"),
        ("room:has space", "chat_id"),
        ("room:a:b", "chat_id"),
        ("room:" + "x" * 129, "chat_id"),
    ],
)
def test_invalid_keys_name_the_field_and_the_fix(text: str, field: str) -> None:
    with pytest.raises(InputError) as caught:
        SessionKey.parse(text)
    assert caught.value.field == field and caught.value.fix


def test_longest_chat_id_is_accepted() -> None:
    assert SessionKey.parse("dm:" + "字" * 128).chat_id == "字" * 128


def test_store_layout(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "data")
    room, dm = SessionKey.parse("room:launch-42"), SessionKey.parse("dm:alice")
    assert store.list_sessions() == []
    assert store.log_path(room) == tmp_path / "data" / "sessions" / "room:launch-42.jsonl"
    log = store.log(room)
    assert store.log(room) is log  # cached per key
    log.append(make_event(str(room), EventKind.MESSAGE, "alice", "hi"))
    store.log(dm).append(make_event(str(dm), EventKind.MESSAGE, "alice", "hey"))
    (tmp_path / "data" / "sessions" / "notes.jsonl").write_text("")  # not a session name
    assert store.list_sessions() == [dm, room]

    ws = store.workspace(room)
    assert ws.root == tmp_path / "data" / "workspaces" / "room:launch-42"
    ws.write_text("plan.md", "shared by the whole room")
    assert store.workspace(room).read_text("plan.md") == "shared by the whole room"
    store.sync()
    store.close()
    assert [e.content for e in store.log(room).read_all()] == ["hi"]  # usable after close
