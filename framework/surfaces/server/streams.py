"""``GET /api/sessions/{key}/events``: a session's events as Server-Sent Events.

Each event is sent with ``id:`` (the event id), ``event:`` (its kind) and ``data:`` (its JSON),
so a browser's ``EventSource`` resumes by itself: it sends the last id it saw as
``Last-Event-ID`` and the stream goes on after it, with nothing twice. ``?after=`` does the
same for clients that cannot set headers. A ``ping`` comment every ``heartbeat`` seconds keeps
proxies from closing an idle stream. Any token with ``read`` on the session may listen, not
only the one that posted.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from framework.surfaces.server.auth import Principal, require
from framework.surfaces.server.problems import ERROR_RESPONSES
from framework.surfaces.server.routes_sessions import Key, parse_key, require_session
from framework.surfaces.server.state import get_state

router = APIRouter(prefix="/api", tags=["streams"], responses=ERROR_RESPONSES)

EventId = Annotated[str | None, Query(max_length=200, description="Resume after this event id")]


@router.get(
    "/sessions/{key}/events",
    summary="Stream a session's events (SSE)",
    response_class=EventSourceResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Event stream"}},
)
async def events(
    request: Request,
    key: Key,
    principal: Annotated[Principal, require("read")],
    after: EventId = None,
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", max_length=200, description="Sent by EventSource on resume"),
    ] = None,
) -> EventSourceResponse:
    """Every event after ``Last-Event-ID`` (or ``?after=``; neither: from the start), then
    live ones as they are appended, by this server or any other process."""
    key = parse_key(key)
    principal.check_session(key)
    state = get_state(request)
    await require_session(state, key)
    since = last_event_id or after  # the header is what a reconnecting EventSource sends

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async for event in state.gateway.subscribe(key, after=since):
            shown = state.scrub.event(event.to_dict())
            data = json.dumps(shown, ensure_ascii=False, separators=(",", ":"))
            yield ServerSentEvent(data=data, id=event.id, event=str(event.kind))

    return EventSourceResponse(stream(), ping=state.config.heartbeat)


__all__ = ["router"]
