"""Where a room's events go: appended to its JSONL log, streamed to the caller when new."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog


def _nowhere(_event: Event) -> None:
    """The stream of work done outside a graph run (a hook in the background): logged only."""


@dataclass(frozen=True, slots=True)
class EventSink:
    """One session's event writer. A graph node gets one bound to its stream writer."""

    session: str
    log: JsonlLog
    stream: Callable[[Any], None] = _nowhere

    def streaming_to(self, stream: Callable[[Any], None]) -> EventSink:
        """The same sink, also streaming new events to ``stream`` (a node's writer)."""
        return replace(self, stream=stream)

    def emit(
        self,
        kind: EventKind,
        author: str,
        content: Any,
        *,
        id: str,
        meta: dict[str, Any] | None = None,
        text_offsets: list[int] | None = None,
    ) -> Event:
        """Append an event to the log and, when it is new, stream it to the caller.

        Ids are deterministic per node run, so a node re-run after a crash re-appends the
        same ids, which the log skips, and nothing is shown or stored twice.
        """
        event = make_event(
            self.session, kind, author, content, id=id, meta=meta, text_offsets=text_offsets
        )
        if self.log.append(event):
            self.stream(event)
        return event
