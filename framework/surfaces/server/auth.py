"""Bearer tokens: who is calling, what they may do, and where.

A route declares the operation it performs with a parameter
``principal: Annotated[Principal, require("post")]`` (``require`` returns the ``Depends``) and
gets the caller's :class:`Principal`; it then checks the session (and the person it acts
for) against the token's scope. No token or an unknown one is 401, an operation or a session
outside the scope 403, a token past its rate 429 with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from framework.sessions.keys import Channel, SessionKey
from framework.surfaces.server.config import OPERATIONS, TokenGrant
from framework.surfaces.server.guard import authenticate, granted, rate_limited, unauthorized
from framework.surfaces.server.problems import Problem
from framework.surfaces.server.state import get_state

_bearer = HTTPBearer(auto_error=False, description="A token from server.yaml or $STAFFROOM_TOKEN")


@dataclass(frozen=True)
class Principal:
    """The caller a request acts for: a token's name and its scope."""

    name: str
    sessions: tuple[str, ...] = ("*",)
    users: tuple[str, ...] = ("*",)
    operations: frozenset[str] = frozenset(OPERATIONS)

    @classmethod
    def of(cls, grant: TokenGrant) -> Principal:
        """The principal a token grants."""
        return cls(grant.name, grant.sessions, grant.users, grant.operations)

    def may(self, operation: str) -> bool:
        """Whether the token was granted ``operation``."""
        return operation in self.operations

    def sees(self, key: str) -> bool:
        """Whether ``key`` is inside the token's sessions (and, for a DM, its users)."""
        if not any(fnmatchcase(key, pattern) for pattern in self.sessions):
            return False
        parsed = SessionKey.parse(key)
        if parsed.channel == Channel.DM:
            user, _, _ = parsed.chat_id.rpartition("@")
            return self.serves(user)
        return True

    def serves(self, user: str) -> bool:
        """Whether the token may act for ``user``."""
        return any(fnmatchcase(user, pattern) for pattern in self.users)

    def check_session(self, key: str) -> None:
        """Raise 403 when ``key`` is outside the token's scope."""
        if not self.sees(key):
            raise _forbidden(
                f"token '{self.name}' may not use session {key}",
                "session",
                "use a token whose `sessions` patterns match this session (server.yaml)",
            )

    def check_user(self, user: str) -> None:
        """Raise 403 when the token may not post as, or open a DM for, ``user``."""
        if not self.serves(user):
            raise _forbidden(
                f"token '{self.name}' may not act for user '{user}'",
                "user",
                "use a token whose `users` patterns match this person (server.yaml)",
            )


def _forbidden(message: str, field: str, fix: str) -> Problem:
    """403: the token is known, but its grant (server.yaml) does not reach this."""
    return Problem(403, "forbidden", message, field=field, fix=fix)


ANONYMOUS = Principal("anonymous")
"""Everyone, everywhere: the caller of a ``--no-auth`` server (127.0.0.1 only)."""


def require(operation: str) -> Any:
    """A FastAPI dependency giving the caller's :class:`Principal` once the token is known,
    within its rate and granted ``operation``."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}; use one of {OPERATIONS}")

    async def dependency(
        request: Request,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    ) -> Principal:
        state = get_state(request)
        if state.config.no_auth:
            return ANONYMOUS
        # The Guard middleware checked the token (and its rate) before the body was read.
        grant = granted(request)
        if grant is None:  # an app mounted without the Guard: check it here
            grant = authenticate(state.config, credentials.credentials if credentials else None)
            if grant is None:
                raise unauthorized("an unknown" if credentials else "no")
            wait = await state.rate_wait(grant.name, grant.rate_limit)
            if wait:
                raise rate_limited(grant, wait)
        principal = Principal.of(grant)
        if not principal.may(operation):
            raise _forbidden(
                f"token '{grant.name}' is not granted '{operation}'",
                "operations",
                f"add '{operation}' to the token's operations in server.yaml",
            )
        return principal

    handler: Callable[..., Awaitable[Principal]] = dependency
    return Depends(handler)


__all__ = ["ANONYMOUS", "Principal", "authenticate", "require"]
