"""Session keys: ``{channel}:{chat_id}``, e.g. ``room:launch-42`` or ``dm:alice``.

A key names a session's JSONL log (``sessions/{key}.jsonl``) and its workspace folder, so the
chat id is validated strictly enough to be safe as part of a file name.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from framework.errors import InputError, UnknownNameError
from framework.names import NAME_FIX, is_name

__all__ = ["Channel", "SessionKey"]


class Channel(StrEnum):
    """Where a conversation happens."""

    DM = "dm"
    """A direct conversation between one person and one employee."""
    ROOM = "room"
    """A group Room: several people and employees, one shared workspace."""


# The one rule for names that become paths (framework.names): no ``/`` or ``:`` can slip in,
# and no ``.``/``..`` or hidden file names.
_CHAT_ID_FIX = NAME_FIX.replace("alice or ou_7d8a", "launch-42 or alice@pm")


@dataclass(frozen=True, slots=True)
class SessionKey:
    """Identifies one session: a DM or a Room. ``str(key)`` is ``channel:chat_id``."""

    channel: Channel
    chat_id: str

    def __post_init__(self) -> None:
        # Accept a plain "room"/"dm" string too, but always store the enum.
        if not isinstance(self.channel, Channel):
            object.__setattr__(self, "channel", _parse_channel(str(self.channel)))
        _check_chat_id(self.chat_id)

    @classmethod
    def parse(cls, text: str) -> SessionKey:
        """Parse ``"room:launch-42"`` or ``"dm:alice"``; raise ``InputError`` when malformed."""
        channel, sep, chat_id = text.partition(":")
        if not sep:
            raise InputError(
                f"session key {text!r} has no ':'",
                field="session",
                fix="write it as channel:chat_id, e.g. room:launch-42 or dm:alice",
            )
        return cls(_parse_channel(channel), chat_id)

    def __str__(self) -> str:
        return f"{self.channel}:{self.chat_id}"

    def dm_people(self) -> tuple[str, str]:
        """``(user, employee)`` of a DM's key ``dm:<user>@<employee>``; else
        :class:`UnknownNameError` saying how a DM key is written."""
        user, _, employee = self.chat_id.rpartition("@")
        if self.channel != Channel.DM or not user:
            raise UnknownNameError(
                f"'{self}' is not a DM session key", field="session", fix="use dm:<user>@<employee>"
            )
        return user, employee


def _parse_channel(text: str) -> Channel:
    try:
        return Channel(text)
    except ValueError:
        choices = ", ".join(c.value for c in Channel)
        raise InputError(
            f"unknown channel {text!r}", field="channel", fix=f"use one of: {choices}"
        ) from None


def _check_chat_id(chat_id: str) -> None:
    if not is_name(chat_id):
        raise InputError(f"invalid chat id {chat_id!r}", field="chat_id", fix=_CHAT_ID_FIX)
