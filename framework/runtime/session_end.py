"""When a session ends, and what ending it does.

A session is the span of a log between two ``session_end`` events (or the log's start). It
ends by :meth:`Room.close` or after ``Settings.session_idle`` seconds of silence, noticed when
the next message comes (a DM has no other natural end). Ending runs the ``session_end``
hooks once for the span, then logs the ``session_end`` event.
"""

from __future__ import annotations

from datetime import UTC, datetime

from framework.extensions.hooks import SessionEnded
from framework.runtime.deps import RoomContext, RoomDeps
from framework.sessions.events import Event, EventKind


def is_idle(deps: RoomDeps) -> bool:
    """Whether the session is open and silent for longer than ``Settings.session_idle``."""
    idle = deps.settings.session_idle
    last = deps.log.tail(1)
    if not idle or not last or last[0].kind == EventKind.SESSION_END:
        return False
    said = datetime.fromisoformat(last[0].ts.replace("Z", "+00:00"))
    return (datetime.now(UTC) - said).total_seconds() >= idle


async def end_session(deps: RoomDeps, reason: str) -> list[Event]:
    """End the open session (``closed`` or ``idle``); the events it caused, in order.

    Nothing happens when the session has already ended and nothing was said since.
    """
    span = deps.log.tail_until(lambda e: e.kind == EventKind.SESSION_END)
    if span and span[0].kind == EventKind.SESSION_END:
        span = span[1:]
    if not span:
        return []
    first, last = span[0], span[-1]
    shown: list[Event] = []
    sink = deps.sink().streaming_to(shown.append)
    # Named after the session's first event: the same however many events hooks add.
    end_id = f"end-{first.id}"
    ended = SessionEnded(end_id, reason=reason, first=first.id, last=last.id, events=len(span))
    # Hooks first, the end event last: a crash in between runs them again next time (with
    # the same id, so what they logged is not logged twice).
    await deps.extensions.hooks.run(ended, RoomContext(deps, sink))
    content = {"reason": reason, "first": first.id, "last": last.id, "events": len(span)}
    sink.emit(EventKind.SESSION_END, "system", content, id=end_id)
    deps.log.sync()
    return shown
