"""uvicorn's HTTP/1.1 protocol (h11) with the server's connection limits and JSON errors.

What happens before a request reaches the app is uvicorn's, and it answers in plain text or
not at all: a malformed or oversized request line and headers get ``400 Invalid HTTP request
received.``, a client may take forever to send its headers (uvicorn has no header timeout, so
a trickle of bytes holds a connection), and its concurrency limit answers ``Service
Unavailable`` as text. This subclass keeps uvicorn's parsing and changes only those edges:

- more than ``max_connections`` open connections: a new one is answered ``503`` (JSON);
- the request line and headers must arrive within ``header_timeout`` seconds of the
  connection (or of the previous response): else ``408`` (JSON) and the connection closes;
- headers over ``max_header_bytes``: ``431`` (JSON); other malformed requests ``400`` (JSON);
- a connection the server closes is closed *lingering*: its sending side first, then, after
  what the client still sends has been read and dropped for up to ``DRAIN_SECONDS``, the
  socket. Closing a socket with unread data sends a reset, which can destroy the answer
  before the client reads it: a 401 or 413 to a client still sending its body would be lost.

Everything after the headers (auth, body caps, per-token limits) is the app's
(:mod:`framework.surfaces.server.guard`).
"""

from __future__ import annotations

import asyncio
import json
from http import HTTPStatus
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from framework.surfaces.server.limits import ServerLimits

DRAIN_SECONDS = 1.0
"""How long a refused connection is read (and discarded) before it is closed: closing with
unread data sends a reset, which can destroy the answer before the client reads it."""


def json_response(status: int, kind: str, message: str, fix: str) -> bytes:
    """A whole HTTP/1.1 response with the server's JSON error body (closes the connection)."""
    body = json.dumps({"error": {"type": kind, "message": message, "field": None, "fix": fix}})
    data = body.encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(data)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + data


def protocol_for(limits: ServerLimits) -> type[H11Protocol]:
    """The protocol class to give uvicorn (``Config(http=...)``) for ``limits``."""

    class GuardedH11Protocol(_Guarded):
        pass

    GuardedH11Protocol.limits = limits
    return GuardedH11Protocol


class _Lingering:
    """The connection's transport, as the protocol sees it: ``close()`` lingers (see the
    module docstring); everything else is the real transport's."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._real = transport
        self._loop = loop
        self.lingering = False

    def close(self) -> None:
        if self.lingering or self._real.is_closing():
            return
        self.lingering = True
        if not self._real.can_write_eof():
            self._real.close()
            return
        self._real.write_eof()  # after what is buffered: the answer still goes out
        self._real.resume_reading()  # read (and drop) what the client still sends
        self._loop.call_later(DRAIN_SECONDS, self._real.close)

    def finish(self) -> None:
        """The client closed its side too: close now."""
        self._real.close()

    def is_closing(self) -> bool:
        return self.lingering or self._real.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _Guarded(H11Protocol):
    limits: ServerLimits = ServerLimits()
    _header_timer: asyncio.TimerHandle | None = None
    _refused = False
    _answered = False

    def connection_made(self, transport: Any) -> None:
        transport = _Lingering(transport, self.loop)
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refused = True  # answered once its request arrives (see _refuse)
        self._watch()

    def data_received(self, data: bytes) -> None:
        if self._lingering():
            return  # dropped: the answer is sent, the connection is closing
        if self._refused:
            self._refuse()
            return
        super().data_received(data)
        self._watch()

    def eof_received(self) -> None:
        if self._lingering():
            assert isinstance(self.transport, _Lingering)
            self.transport.finish()

    def _lingering(self) -> bool:
        return isinstance(self.transport, _Lingering) and self.transport.lingering

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        buffered = len(self.conn.trailing_data[0])
        if buffered >= self.limits.max_header_bytes:
            answer = json_response(
                431,
                "headers_too_large",
                f"the request line and headers are over {self.limits.max_header_bytes} bytes",
                "send smaller headers (limits.max_header_bytes in server.yaml)",
            )
        else:
            answer = json_response(
                400,
                "malformed_request",
                "the request is not valid HTTP/1.1",
                "send a well-formed HTTP request (see /docs)",
            )
        self.logger.warning("%s (%d bytes buffered)", msg, buffered)
        self._stop_timer()
        if not self.transport.is_closing():
            self.transport.write(answer)
            self.transport.close()

    def _refuse(self) -> None:
        # Answer the first bytes, then read and drop the rest for a moment before closing.
        if self._answered:
            return
        self._answered = True
        self._stop_timer()
        self.transport.write(
            json_response(
                503,
                "too_many_connections",
                f"the server has {self.limits.max_connections} connections open",
                "retry in a moment (limits.max_connections in server.yaml)",
            )
        )
        self.transport.close()

    def _watch(self) -> None:
        # Between requests (none yet, or the last one answered) the client has
        # header_timeout seconds to send the next request's line and headers.
        waiting = self.cycle is None or self.cycle.response_complete
        if waiting and self._header_timer is None and not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.limits.header_timeout, self._too_slow)
        elif not waiting:
            self._stop_timer()

    def _too_slow(self) -> None:
        self._header_timer = None
        waiting = self.cycle is None or self.cycle.response_complete
        if not waiting or self.transport.is_closing():
            return
        if self._refused:
            self.transport.close()
            return
        if self.conn.trailing_data[0]:  # half a request: say why it is cut off
            self.transport.write(
                json_response(
                    408,
                    "request_timeout",
                    f"the request's headers took over {self.limits.header_timeout:g} s",
                    "send the whole request at once (limits.header_timeout in server.yaml)",
                )
            )
        self.transport.close()

    def _stop_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None


__all__ = ["json_response", "protocol_for"]
