"""What a room accepts as a person's message: one check, made once per message.

:meth:`Room.accepts <framework.runtime.room.Room.accepts>` makes it (cheap: no I/O) and
returns an :class:`Accepted`, which ``Room.post`` and ``Gateway.post`` take as it is. A
surface that must answer before the message is queued (the server's 400) asks first, and
nothing on the way to the room asks again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from framework.errors import InputError
from framework.names import check_name


@dataclass(frozen=True)
class Accepted:
    """A message that passed :func:`accept`: its author's name is valid and it has text.

    Made by ``Room.accepts``; the gateway's queue joins texts of one accepted author (a
    double text) into one, which stays accepted."""

    author: str
    """Who says it (the room's first human when none was named)."""
    text: str
    """What they said, as they said it."""


def accept(humans: Sequence[str], text: str, author: str | None = None) -> Accepted:
    """``text`` by ``author`` (default: the first of ``humans``) as a room accepts it, or the
    :class:`InputError` naming the field and the fix."""
    who = check_name((humans or [""])[0] if author is None else author, field="author")
    if not text.strip():
        raise InputError("a message needs some text", field="text", fix="post some text")
    return Accepted(who, text)


__all__ = ["Accepted", "accept"]
