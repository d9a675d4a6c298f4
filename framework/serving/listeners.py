"""The gateway's listeners (webhooks, chat adapters): every event its runs produce, handed
over in the background, in order, so a slow receiver never delays a room."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from framework.sessions.events import Event

__all__ = ["LISTENER_QUEUE", "Listener", "Listeners"]

log = logging.getLogger("staffroom.gateway")

Listener = Callable[[str, Event], Awaitable[None]]

LISTENER_QUEUE = 10_000
"""Events held for listeners; past this a slow listener loses events (logged), rooms go on."""


class Listeners:
    """Who hears a gateway's events, and the queue between its runs and them."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._queue: asyncio.Queue[tuple[str, Event]] = asyncio.Queue(LISTENER_QUEUE)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0
        """Events no listener got because the queue was full."""

    def add(self, listener: Listener) -> None:
        """Call ``listener(session, event)`` for every event from now on (a background
        task; a listener's exception is logged and skipped)."""
        self._listeners.append(listener)
        if self._task is None:
            self._task = asyncio.create_task(self._dispatch(), name="gateway listeners")

    def emit(self, session: str, event: Event) -> None:
        """Queue ``event`` for the listeners (never waits)."""
        if not self._listeners:
            return
        try:
            self._queue.put_nowait((session, event))
        except asyncio.QueueFull:
            self.dropped += 1
            log.warning("listener queue full: event %s of %s not delivered", event.id, session)

    async def close(self) -> None:
        """Deliver what is queued, then stop."""
        if self._task is not None:
            await self._queue.join()
            self._task.cancel()

    async def _dispatch(self) -> None:
        while True:
            session, event = await self._queue.get()
            try:
                for listener in list(self._listeners):
                    try:
                        await listener(session, event)
                    except Exception:
                        log.exception("listener failed on event %s of %s", event.id, session)
            finally:
                self._queue.task_done()
