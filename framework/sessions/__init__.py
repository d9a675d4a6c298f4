"""History layer: session keys, events, append-only JSONL logs, workspaces and the store."""

from framework.sessions.events import Event, EventKind, make_event, new_event_id, utc_now
from framework.sessions.jsonl_log import Durability, JsonlLog, LockKind
from framework.sessions.keys import Channel, SessionKey
from framework.sessions.store import SessionStore
from framework.sessions.workspace import Workspace

__all__ = [
    "Channel",
    "Durability",
    "Event",
    "EventKind",
    "JsonlLog",
    "LockKind",
    "SessionKey",
    "SessionStore",
    "Workspace",
    "make_event",
    "new_event_id",
    "utc_now",
]
