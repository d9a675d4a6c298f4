"""Every error the server answers is one JSON shape, never a traceback or an HTML page::

    {"error": {"type": "unknown_name", "message": "...", "field": "scenario", "fix": "..."}}

Routes raise the project's own errors (``InputError`` and friends) or :class:`Problem`;
:func:`install_handlers` turns each into its status code here, in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from framework.database.pool import is_outage
from framework.errors import (
    InputError,
    ModelError,
    RoomBusyError,
    StaffroomError,
    StorageError,
    UnknownNameError,
)
from framework.knowledge.library import NotEntitledError

log = logging.getLogger("staffroom.server")


class ProblemBody(BaseModel):
    """What went wrong, for a person or a bot to act on."""

    type: str
    message: str
    field: str | None = None
    fix: str | None = None


class ErrorResponse(BaseModel):
    """The body of every error response."""

    error: ProblemBody


def error_responses(*codes: tuple[int, str]) -> dict[int | str, dict[str, Any]]:
    """``responses=`` showing the error body for each ``(status, what it means)``."""
    return {code: {"model": ErrorResponse, "description": text} for code, text in codes}


ERROR_RESPONSES = error_responses(
    (400, "Bad input"),
    (401, "No or unknown bearer token"),
    (403, "The token may not do this here"),
    (404, "Unknown session, room, scenario or employee"),
    (422, "A field is missing or malformed"),
    (429, "Rate limit reached (see Retry-After)"),
)
"""``responses=`` for routers, so the OpenAPI document shows the error shape."""


class Problem(Exception):
    """An HTTP error with the server's JSON body: raise it from routes and dependencies."""

    def __init__(
        self,
        status: int,
        type: str,
        message: str,
        *,
        field: str | None = None,
        fix: str | None = None,
        headers: Mapping[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = ProblemBody(type=type, message=message, field=field, fix=fix)
        self.headers = dict(headers or {})
        self.extra = extra or {}

    def response(self) -> JSONResponse:
        """The JSON response for this problem."""
        content = {"error": self.body.model_dump(), **self.extra}
        return JSONResponse(content, status_code=self.status, headers=self.headers)


OUTAGE = Problem(
    503,
    "database_unavailable",
    "the database is out of reach for the moment (restarting, or the network)",
    fix="send the same request again in a few seconds (the same message_id or Idempotency-Key "
    "is answered once)",
    headers={"Retry-After": "2"},
)
"""What a request gets while the database is out of reach (never a 500)."""


def from_error(exc: StaffroomError) -> Problem:
    """The problem (status and body) for one of the project's own errors."""
    if is_outage(exc):  # a store that could not reach the database: try again shortly
        return OUTAGE
    if isinstance(exc, NotEntitledError):
        return Problem(403, "forbidden", exc.message, field=exc.field, fix=exc.fix)
    if isinstance(exc, InputError):
        status, kind = (
            (404, "unknown_name") if isinstance(exc, UnknownNameError) else (400, "bad_input")
        )
        return Problem(status, kind, exc.message, field=exc.field, fix=exc.fix)
    if isinstance(exc, RoomBusyError):
        fix = "wait for the room's current run to finish, then send again"
        return Problem(409, "room_busy", str(exc), fix=fix, headers={"Retry-After": "1"})
    if isinstance(exc, ModelError):
        return Problem(502, "model_error", str(exc), fix="check the model's settings and server")
    if isinstance(exc, StorageError):
        fix = "run `staffroom doctor` on the data folder"
        return Problem(503, "storage_error", str(exc), fix=fix)
    return Problem(500, "staffroom_error", str(exc))


def _validation_problem(exc: RequestValidationError) -> Problem:
    errors = exc.errors()
    first = errors[0] if errors else {}
    loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
    where = ".".join(loc) or None
    message = str(first.get("msg", "the request is malformed"))
    if where:
        message = f"{where}: {message}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem(s))"
    fix = (
        f"send '{where}' as the API reference shows (/docs, /openapi.json)"
        if where
        else "send a JSON body as the API reference shows (/docs, /openapi.json)"
    )
    return Problem(422, "invalid_request", message, field=where, fix=fix)


def install_handlers(app: FastAPI) -> None:
    """Route every exception to the JSON shape above."""

    async def problem(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Problem)
        return exc.response()

    async def staffroom(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StaffroomError)
        found = from_error(exc)
        if found.status >= 500:
            log.warning("request failed: %s", exc)
        # Errors are written for a terminal and name files where they are; callers get them
        # relative to the project (framework/surfaces/server/public.py).
        state = getattr(request.app.state, "staffroom", None)
        scrub = getattr(state, "scrub", None)
        if scrub is not None:
            found.body = ProblemBody.model_validate(scrub.value(found.body.model_dump()))
        return found.response()

    async def validation(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return _validation_problem(exc).response()

    async def http(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        fix = "see the API reference at /docs" if exc.status_code in (404, 405) else None
        found = Problem(exc.status_code, kind, str(exc.detail), fix=fix, headers=exc.headers)
        return found.response()

    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        if is_outage(exc):  # the database restarting or out of reach: try again shortly
            log.warning("database unreachable on %s %s: %s", request.method, request.url.path, exc)
            return OUTAGE.response()
        # Logged with its traceback for the operator; the caller learns only that it failed.
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        found = Problem(500, "internal_error", "the server failed to handle this request")
        return found.response()

    app.add_exception_handler(Problem, problem)
    app.add_exception_handler(StaffroomError, staffroom)
    app.add_exception_handler(RequestValidationError, validation)
    app.add_exception_handler(StarletteHTTPException, http)
    app.add_exception_handler(Exception, unexpected)


__all__ = [
    "ERROR_RESPONSES",
    "ErrorResponse",
    "Problem",
    "ProblemBody",
    "error_responses",
    "from_error",
    "install_handlers",
]
