"""What one request, one token and the whole server may hold: body sizes, concurrent requests
and streams, and how long a client may take to send a request.

Body caps are derived from the largest *valid* request of each kind of route, so a request
the API accepts is never refused for its size, and anything larger is refused before it is
read. JSON may escape every character of a string: a character outside the BMP becomes a
surrogate pair, ``\\ud83d\\ude00``, 12 bytes for one character. So a field of ``n``
characters may take ``12 n`` bytes on the wire.

Set in ``server.yaml`` (``limits:``); every figure has a default that a demanding deployment
need not touch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from framework.specs.limits import MAX_TEXT_CHARS

ESCAPED_BYTES_PER_CHAR = 12
"""Bytes one character may take in JSON (a surrogate pair, each half ``\\uXXXX``)."""
MESSAGE_CHARS = 100_000
"""Characters one posted message may hold (a long paste; documents belong in the workspace)."""
SOP_EDIT_CHARS = 200_000
"""Characters an SOP edit's card (or its steps, together) may hold."""
_ENVELOPE = 64 * 1024
"""Room for everything around the big fields: names, ids, keys, JSON punctuation."""


def escaped(chars: int) -> int:
    """Bytes a request whose text fields hold ``chars`` characters may take, at most."""
    return chars * ESCAPED_BYTES_PER_CHAR + _ENVELOPE


class BodyKind(StrEnum):
    """The kinds of route whose bodies are capped separately."""

    MESSAGES = "messages"
    SOP_EDITS = "sop_edits"
    ADAPTERS = "adapters"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """Bytes a request body may hold, by kind of route."""

    messages: int = escaped(MESSAGE_CHARS)
    """``POST /api/sessions/{key}/messages``: the text plus author, ids."""
    sop_edits: int = escaped(SOP_EDIT_CHARS + 3 * MAX_TEXT_CHARS)
    """``POST /api/sops/{id}/versions``: a card (or steps) plus note, goal and body."""
    adapters: int = 1_000_000
    """``/adapters/*``: a platform's event (a few kilobytes), read before its signature is
    checked (the signature is over the body), so it gets a cap of its own."""
    other: int = escaped(2 * MAX_TEXT_CHARS)
    """Every other route: the largest is an approval's or deprecation's note."""

    def of(self, kind: BodyKind) -> int:
        """The cap of ``kind``."""
        return int(getattr(self, kind.value))


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The server's ceilings (``limits:`` in ``server.yaml``)."""

    body: BodyLimits = field(default_factory=BodyLimits)
    max_connections: int = 1000
    """Open client connections, idle or not; beyond it a new connection is answered 503."""
    max_requests: int = 256
    """Requests being handled at once (streams not counted); beyond it 503."""
    max_requests_per_token: int = 64
    """Requests one token has under way at once (streams not counted); beyond it 429."""
    max_streams: int = 500
    """SSE streams open at once; beyond it 503."""
    max_streams_per_token: int = 50
    """SSE streams one token holds at once; beyond it 429."""
    max_header_bytes: int = 16 * 1024
    """The request line and headers together; beyond it 431."""
    header_timeout: float = 10.0
    """Seconds a client may take to send a request's line and headers (a slow client is cut
    off, so it cannot hold a connection)."""
    body_timeout: float = 30.0
    """Seconds a client may take to send a body; then 408."""
    keep_alive: int = 5
    """Seconds an idle kept-alive connection stays open."""


_MESSAGES = re.compile(r"^/api/sessions/[^/]+/messages/?$")
_SOP_EDITS = re.compile(r"^/api/sops/[^/]+/versions/?$")
_STREAM = re.compile(r"^/api/sessions/[^/]+/events/?$")


def body_kind(method: str, path: str) -> BodyKind:
    """Which cap a request's body gets, from its method and path (before routing)."""
    if path.startswith("/adapters/"):
        return BodyKind.ADAPTERS
    if method == "POST" and _MESSAGES.match(path):
        return BodyKind.MESSAGES
    if method == "POST" and _SOP_EDITS.match(path):
        return BodyKind.SOP_EDITS
    return BodyKind.OTHER


def is_stream(method: str, path: str) -> bool:
    """Whether the request opens a session's SSE stream."""
    return method == "GET" and bool(_STREAM.match(path))


__all__ = [
    "ESCAPED_BYTES_PER_CHAR",
    "MESSAGE_CHARS",
    "SOP_EDIT_CHARS",
    "BodyKind",
    "BodyLimits",
    "ServerLimits",
    "body_kind",
    "escaped",
    "is_stream",
]
