"""Events from outside a room's runs, appended to its log without starting one.

What a schedule delivers into a room or a DM (``deliver: {room}`` / ``deliver: {dm}``): other
sessions' replies and the framework's notices. They join the room's history (its employees
read them in later turns like any message) but answer nothing and ask for no answer: no turn
runs, the checkpoint is not touched, and a person's next message is routed as usual (they
are not people's messages, so the room never takes them for its input).

They are appended under the room's run guard (``runtime/run_lock.py``): between two runs,
never in the middle of one, and on PostgreSQL under the room's lease, which fences the log
(an append without it is refused).
"""

from __future__ import annotations

from collections.abc import Sequence

from framework.runtime.room import Room
from framework.sessions.events import Event

__all__ = ["append_outside"]


async def append_outside(room: Room, events: Sequence[Event]) -> list[Event]:
    """Append ``events`` (made for ``room``'s session) to its log, starting no run; the ones
    appended, in order (an id the log holds already is skipped, so the same events again
    append nothing). Waits for a run under way to end, as a run would."""
    wrong = [e.id for e in events if e.session != room.key]
    if wrong:
        raise ValueError(f"events {wrong[:3]} are not of session {room.key}")
    if not events:
        return []
    # Room's own guard and log (room.py is at its line budget, so this operation lives here):
    # the guard is the one its runs take, so an append never lands inside a run, and with a
    # lease it fences the log exactly as a run's writes are fenced.
    async with room._running():
        log = room._deps.log
        added = log.append_many(events)
        log.sync()
    return [event for event, fresh in zip(events, added, strict=True) if fresh]
