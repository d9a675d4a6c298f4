"""What Feishu / Lark sends: callback bodies and message events as typed models, and a
message's words.

Every field read is typed, so a body of the wrong shape is an ``InputError`` naming the field
(``header.token``, ``event.message.content``), answered 400, never a crash; fields Feishu adds
over time are ignored. A ``text`` or ``post`` message's ``content`` is JSON inside a string,
read the same way.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from framework.surfaces.adapters.base import read_json

MESSAGE_EVENT = "im.message.receive_v1"
PLACEHOLDER = re.compile(r"@_user_\d+|@_all")
"""How Feishu writes a mention in a message's words (``mentions`` says whom ``key`` names)."""
FIX = "send the JSON Feishu's event subscription posts (schema 2.0)"


class _Lenient(BaseModel):
    # Feishu adds fields over time: read what is needed, keep the rest out of the way.
    model_config = ConfigDict(extra="ignore")


class FeishuIds(_Lenient):
    """A user's (or bot's) ids; which ones come depends on the app's permissions."""

    open_id: str | None = None
    union_id: str | None = None
    user_id: str | None = None

    def all(self) -> list[str]:
        """The ids there are, most stable first."""
        return [i for i in (self.user_id, self.union_id, self.open_id) if i]


class FeishuSender(_Lenient):
    """Who sent a message: ``sender_type`` ``user``, or ``app`` for a bot."""

    sender_id: FeishuIds = Field(default_factory=FeishuIds)
    sender_type: str = "user"


class FeishuMention(_Lenient):
    """Whom the placeholder ``key`` (``@_user_1``) in a message's words names."""

    key: str
    id: FeishuIds = Field(default_factory=FeishuIds)
    name: str = ""


class FeishuMessage(_Lenient):
    """The ``message`` of an ``im.message.receive_v1`` event."""

    message_id: str = Field(min_length=1)
    root_id: str | None = None
    parent_id: str | None = None
    """The message this one replies to (``root_id``: its thread's first)."""
    chat_id: str = Field(min_length=1)
    chat_type: str = "group"
    message_type: str
    content: str
    """JSON in a string: :class:`_Text` or :class:`_Post` by ``message_type``."""
    mentions: list[FeishuMention] = Field(default_factory=list)


class FeishuEvent(_Lenient):
    """The ``event`` of an ``im.message.receive_v1`` callback."""

    sender: FeishuSender = Field(default_factory=FeishuSender)
    message: FeishuMessage


class _Text(_Lenient):
    text: str = ""


class _Node(_Lenient):  # of a post: text, an @ (user_id: its placeholder), a link...
    text: str | None = None
    user_id: str | None = None
    href: str | None = None


class _Post(_Lenient):
    title: str | None = None
    content: list[list[_Node]] = Field(default_factory=list)


class FeishuHeader(_Lenient):
    """A schema 2.0 event's ``header``: the fields read."""

    event_type: str = Field(default="", examples=[MESSAGE_EVENT])
    token: str | None = Field(default=None, description="the app's verification token")


class FeishuCallback(_Lenient):
    """A callback body: ``{"encrypt": …}`` (AES-256-CBC of the JSON, base64), a
    ``url_verification`` (``token``, ``challenge``), or a schema 2.0 event."""

    encrypt: str | None = None
    type: str | None = Field(default=None, examples=["url_verification"])
    token: str | None = None
    challenge: str | None = None
    header: FeishuHeader | None = None
    event: dict[str, Any] | None = Field(
        default=None, description=f"read as sender and message when {MESSAGE_EVENT}"
    )


def message_text(message: FeishuMessage) -> str | None:
    """The words of a ``text`` or ``post`` message (None for images, files, cards...)."""
    kind, at = message.message_type, ("event", "message", "content")
    if kind == "text":
        what = "not a Feishu text message"
        return read_json(_Text, message.content, what=what, fix=FIX, at=at).text
    if kind != "post":
        return None
    post = read_json(_Post, message.content, what="not a Feishu post", fix=FIX, at=at)
    lines = [post.title] if post.title else []
    lines += ["".join(n.text or n.user_id or n.href or "" for n in line) for line in post.content]
    return "\n".join(lines)


__all__ = [
    "FIX",
    "MESSAGE_EVENT",
    "PLACEHOLDER",
    "FeishuCallback",
    "FeishuEvent",
    "FeishuHeader",
    "FeishuMention",
    "FeishuMessage",
    "message_text",
]
