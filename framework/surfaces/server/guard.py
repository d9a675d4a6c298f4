"""The server's front door: everything checked from a request's line and headers, before any
route runs or any byte of its body is read.

In order:

1. ``--no-auth`` (a local try-out): the ``Host`` must be a loopback name (``127.0.0.1``,
   ``localhost``, ``[::1]``, with any port), so a web page that rebinds its own DNS name to
   127.0.0.1 cannot drive the server; and a state-changing request from a browser must come
   from the server's own origin (``Origin`` / ``Sec-Fetch-Site``).
2. The bearer token, on every ``/api`` route but ``/api/health``: no token or an unknown one is
   401 *before the body is read* (FastAPI reads a body before it resolves dependencies), then
   the token's rate (429). The grant is handed to the route (:func:`granted`), which checks
   the operation and scope.
3. Concurrency: requests and SSE streams under way, per token (429) and in all (503).
4. The body: a ``Content-Length`` over the route's cap is 413 at once; otherwise the body is
   read here, counted as it streams (a missing or false length changes nothing), and 413 as
   soon as it passes the cap; a body that takes over ``body_timeout`` is 408. Refusals close
   the connection, so nobody keeps streaming into it.

Chat-platform callbacks (``/adapters/*``) carry no token (their signature is over the body),
so they get only their own body cap here and are verified by their adapter.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from framework.database.pool import is_outage
from framework.surfaces.server.config import ServerConfig, TokenGrant
from framework.surfaces.server.limits import body_kind, is_stream
from framework.surfaces.server.problems import OUTAGE, Problem

log = logging.getLogger("staffroom.server")

OPEN_PATHS = frozenset({"/api/health"})
"""API paths that need no token."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_GRANT = "staffroom_grant"


@dataclass
class Load:
    """Requests and streams under way, per token and in all (one per server process)."""

    requests: int = 0
    streams: int = 0
    requests_by: Counter[str] = field(default_factory=Counter)
    streams_by: Counter[str] = field(default_factory=Counter)


def granted(request: Request) -> TokenGrant | None:
    """The grant :class:`Guard` found for ``request`` (None: not checked there)."""
    found = request.scope.get("state", {}).get(_GRANT)
    return found if isinstance(found, TokenGrant) else None


def authenticate(config: ServerConfig, secret: str | None) -> TokenGrant | None:
    """The grant whose secret is ``secret``, compared in constant time; None when none is."""
    if not secret:
        return None
    found = None
    given = secret.encode()
    for grant in config.tokens:
        # No early exit: every secret is compared, so timing tells nothing about which matched.
        if hmac.compare_digest(given, grant.secret.encode()):
            found = grant
    return found


def unauthorized(said: str) -> Problem:
    """401 for a request with ``said`` ("no" / "an unknown") bearer token."""
    return Problem(
        401,
        "unauthorized",
        f"the request carries {said} bearer token",
        field="Authorization",
        fix="send `Authorization: Bearer <token>` with a token from server.yaml or "
        "$STAFFROOM_TOKEN",
        headers={"WWW-Authenticate": "Bearer"},
    )


def rate_limited(grant: TokenGrant, wait: float) -> Problem:
    """429 for a token past its rate."""
    return Problem(
        429,
        "rate_limited",
        f"token '{grant.name}' is over its {grant.rate_limit} requests a minute",
        fix=f"wait {wait:.0f} s (Retry-After) or raise its rate_limit in server.yaml",
        headers={"Retry-After": f"{wait:.0f}"},
    )


class Guard:
    """ASGI middleware doing the checks of the module docstring (``app.add_middleware``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope["app"].state.staffroom  # a ServerState (whose module imports this one)
        config: ServerConfig = state.config
        headers = Headers(scope=scope)
        method, path = scope["method"], scope["path"]
        has_body = _has_body(headers)
        try:
            if config.no_auth:
                _check_local(headers, method)
            grant = await self._identify(state, headers, path)
        except Problem as problem:
            await _answer(problem, scope, receive, send, close=has_body)
            return
        except Exception as exc:  # the shared rate buckets' database, out of reach
            if not is_outage(exc):
                raise
            await _answer(OUTAGE, scope, receive, send, close=has_body)
            return
        if grant is not None:
            scope.setdefault("state", {})[_GRANT] = grant
        who = grant.name if grant is not None else "anonymous"
        stream = is_stream(method, path)
        try:
            _enter(state.load, config, who, stream=stream)
        except Problem as problem:
            await _answer(problem, scope, receive, send, close=has_body)
            return
        try:
            if has_body:
                body = await _read_body(config, headers, method, path, receive)
                if isinstance(body, Problem):
                    await _answer(body, scope, receive, send, close=True)
                    return
                receive = _replay(body, receive)
            await _run_app(self.app, scope, receive, send)
        finally:
            _leave(state.load, who, stream=stream)

    async def _identify(self, state: Any, headers: Headers, path: str) -> TokenGrant | None:
        config: ServerConfig = state.config
        if config.no_auth or not path.startswith("/api/") or path in OPEN_PATHS:
            return None
        scheme, _, secret = headers.get("authorization", "").partition(" ")
        bearer = secret.strip() if scheme.lower() == "bearer" else ""
        grant = authenticate(config, bearer or None)
        if grant is None:
            raise unauthorized("an unknown" if bearer else "no")
        # Awaited: with a database the buckets are the ones every replica shares.
        wait: float = await state.rate_wait(grant.name, grant.rate_limit)
        if wait:
            raise rate_limited(grant, wait)
        return grant


async def _run_app(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app``; an exception it raised before answering becomes the JSON 500 here.

    Starlette's outermost handler answers too, but then raises again for the server to log,
    and uvicorn drops the keep-alive connection. The caller learns only that it failed; the
    operator's log gets the traceback.
    """
    started = False

    async def watched(message: Message) -> None:
        nonlocal started
        started = started or message["type"] == "http.response.start"
        await send(message)

    try:
        await app(scope, receive, watched)
    except Exception:
        if started:
            raise  # half an answer is out: nothing to do but drop the connection
        problem = _unexpected(scope)
        await problem.response()(scope, receive, send)


def _unexpected(scope: Scope) -> Problem:
    """The answer to an exception nobody handled: 503 while the database is out of reach
    (``problems.OUTAGE``), else a JSON 500 (its traceback goes to the operator's log)."""
    exc = sys.exc_info()[1]
    if exc is not None and is_outage(exc):
        log.warning("database unreachable on %s %s: %s", scope["method"], scope["path"], exc)
        return OUTAGE
    log.exception("unexpected error on %s %s", scope["method"], scope["path"])
    return Problem(500, "internal_error", "the server failed to handle this request")


def _has_body(headers: Headers) -> bool:
    length = headers.get("content-length")
    return "transfer-encoding" in headers or (length is not None and length.strip() != "0")


def _enter(load: Load, config: ServerConfig, who: str, *, stream: bool) -> None:
    limits = config.limits
    if stream:
        mine, total = load.streams_by[who], load.streams
        own_cap, all_cap, what = limits.max_streams_per_token, limits.max_streams, "streams"
    else:
        mine, total = load.requests_by[who], load.requests
        own_cap, all_cap, what = limits.max_requests_per_token, limits.max_requests, "requests"
    if mine >= own_cap:
        raise Problem(
            429,
            "too_many_" + what,
            f"token '{who}' has {mine} {what} open; it may have {own_cap} at once",
            fix=f"close some first, or raise limits.max_{what}_per_token in server.yaml",
            headers={"Retry-After": "1"},
        )
    if total >= all_cap:
        raise Problem(
            503,
            "server_busy",
            f"the server has {total} {what} open; it takes {all_cap} at once",
            fix=f"retry in a moment, or raise limits.max_{what} in server.yaml",
            headers={"Retry-After": "1"},
        )
    if stream:
        load.streams += 1
        load.streams_by[who] += 1
    else:
        load.requests += 1
        load.requests_by[who] += 1


def _leave(load: Load, who: str, *, stream: bool) -> None:
    counts = load.streams_by if stream else load.requests_by
    counts[who] -= 1
    if counts[who] <= 0:
        del counts[who]
    if stream:
        load.streams -= 1
    else:
        load.requests -= 1


def _too_large(cap: int) -> Problem:
    return Problem(
        413,
        "too_large",
        f"the body is over {cap:,} bytes, the most this route takes",
        field="body",
        fix="send less (the limits are under Security in the docs' server guide; an operator can "
        "raise limits.body in server.yaml)",
    )


async def _read_body(
    config: ServerConfig, headers: Headers, method: str, path: str, receive: Receive
) -> bytes | Problem:
    cap = config.limits.body.of(body_kind(method, path))
    declared = headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            return Problem(
                400, "bad_request", "Content-Length is not a number", field="Content-Length"
            )
        if int(declared) > cap:
            return _too_large(cap)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(config.limits.body_timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > cap:  # counted as it streams: a false Content-Length changes nothing
                    return _too_large(cap)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
    except TimeoutError:
        return Problem(
            408,
            "request_timeout",
            f"the body took over {config.limits.body_timeout:g} s to arrive",
            field="body",
            fix="send the body at once (limits.body_timeout in server.yaml)",
        )
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # then the client's disconnect, as the app expects

    return replay


async def _answer(
    problem: Problem, scope: Scope, receive: Receive, send: Send, *, close: bool
) -> None:
    if close:  # the body is not read: nobody may keep streaming it into this connection
        problem.headers["Connection"] = "close"
    await problem.response()(scope, receive, send)


# -- --no-auth: loopback only ------------------------------------------------------------------


def _check_local(headers: Headers, method: str) -> None:
    host = headers.get("host", "")
    if not _loopback(host):
        raise Problem(
            421,
            "bad_host",
            "a --no-auth server answers only requests addressed to 127.0.0.1, localhost or [::1]",
            field="Host",
            fix="open it as http://127.0.0.1:<port>/ (or serve with tokens to be reached by "
            "another name)",
        )
    if method in SAFE_METHODS:
        return
    origin = headers.get("origin")
    site = headers.get("sec-fetch-site")
    same = origin is None or (_loopback(urlsplit(origin).netloc) and _same_host(origin, host))
    if not same or site not in (None, "same-origin", "none"):
        raise Problem(
            403,
            "cross_origin",
            "a --no-auth server refuses changes sent by another site's page",
            field="Origin",
            fix="use the viewer this server serves, or a client outside the browser",
        )


def _same_host(origin: str, host: str) -> bool:
    return urlsplit(origin).netloc.lower() == host.lower()


def _loopback(host: str) -> bool:
    name = _hostname(host)
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _hostname(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8765
        return host[1:].partition("]")[0]
    name, _, port = host.rpartition(":") if host.count(":") == 1 else (host, "", "")
    return name if not port or port.isdigit() else ""


__all__ = [
    "OPEN_PATHS",
    "Guard",
    "Load",
    "authenticate",
    "granted",
    "rate_limited",
    "unauthorized",
]
