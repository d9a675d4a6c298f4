"""Who speaks next: pure functions over the room's state (no I/O, no model).

Order: the SOP's steps first, then @mentions, then a selector. Every pick carries its reason
(``why``) so the transcript explains its own order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from framework.specs.employee import EmployeeCard

_MENTION = re.compile(r"@([^\s@,，。:：;；!！?？]+)")


def parse_mentions(text: str, employees: dict[str, EmployeeCard]) -> list[str]:
    """Employee ids @mentioned in ``text`` (by id, role or display name), in order, once each."""
    found: list[str] = []
    for token in _MENTION.findall(text):
        lowered = token.lower()
        for card in employees.values():
            names = {card.id.lower(), card.role.lower(), card.display_name.lower()}
            if lowered in names and card.id not in found:
                found.append(card.id)
    return found


def is_stop(text: str, stop_words: Sequence[str]) -> bool:
    """True when the message is (or starts with) one of the stop words."""
    stripped = text.strip().lower()
    return any(stripped == w.lower() or stripped.startswith(w.lower() + " ") for w in stop_words)


def round_robin(participants: Sequence[str], last_speaker: str | None) -> str:
    """The participant after ``last_speaker`` (the first one if nobody spoke yet)."""
    if not participants:
        raise ValueError("a room needs at least one participant")
    if last_speaker is None or last_speaker not in participants:
        return participants[0]
    return participants[(list(participants).index(last_speaker) + 1) % len(participants)]


def pick_from_reply(reply: str, participants: Sequence[str]) -> str | None:
    """The first participant id named in a selector model's reply, if any."""
    positions = [(reply.find(p), p) for p in participants if p in reply]
    return min(positions)[1] if positions else None
