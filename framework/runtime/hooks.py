"""Hook points: work that runs at moments of a session, registered rather than wired in.

=============== ===================================================================
point           when, and where
=============== ===================================================================
``message``     a person's message is routed (inside the run, before anyone answers)
``reply``       an employee's reply is logged (inside its turn)
``background``  a post, start or retry has yielded all its events (in the background,
                so it never delays a reply; :meth:`Room.drain` waits for it)
``run_end``     a run ends: its SOP completed, a stop word, or the turn cap (inside the
                run, before its ``outcome`` event)
``session_end`` the session ends: :meth:`Room.close`, or the next message after
                ``Settings.session_idle`` seconds of silence (before that message)
=============== ===================================================================

Hooks inside the run re-run with their node after a crash, so they must be idempotent:
:attr:`HookCall.id` is deterministic for that purpose. A hook that fails with one of our
errors, an ``OSError`` or a database error is recorded as an ``error`` event (``hook_failed``)
and the room goes on; any other exception is a bug and propagates.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from framework.errors import StaffroomError
from framework.runtime.sink import EventSink
from framework.sessions.events import EventKind

if TYPE_CHECKING:
    from framework.runtime.deps import RoomDeps


class HookPoint(StrEnum):
    """Where in a session a hook runs (see the module docstring)."""

    MESSAGE = "message"
    REPLY = "reply"
    BACKGROUND = "background"
    RUN_END = "run_end"
    SESSION_END = "session_end"


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How an SOP run ended (``run_end``)."""

    reason: str
    """``sop_complete``, ``stop_word`` or ``max_turns``."""
    state: Mapping[str, Any]
    """The room's control state at the end (epoch, sop, steps, turns)."""


@dataclass(frozen=True, slots=True)
class Reply:
    """An employee's reply (``reply``)."""

    employee: str
    text: str
    tools_called: list[str]
    """Names of the tools it called during the turn."""
    answering: str | None
    """The person whose message the turn answers (None when the latest message is not a
    person's)."""
    said: str
    """That person's message ("" when there is none, or their MEMORY.md refuses writes)."""
    offline: bool
    """True when the offline simulator answered (a test double: nothing to judge)."""


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """Which span of the log a session covered (``session_end``)."""

    reason: str
    """``closed`` or ``idle``."""
    first: str
    """Id of the session's first event."""
    last: str
    """Id of its last event before the end."""
    events: int


@dataclass(frozen=True, slots=True)
class HookCall:
    """What a hook is given: the room, where its events go, and what happened."""

    point: HookPoint
    room: RoomDeps
    events: EventSink
    id: str
    """Deterministic for the moment (a message id, a run's epoch, a session's end): event ids
    made from it make a re-run hook add nothing twice."""
    message: Mapping[str, Any] | None = None
    """``message``: the routed message (``id``, ``author``, ``content``)."""
    reply: Reply | None = None
    run: RunEnd | None = None
    session: SessionEnd | None = None


Hook = Callable[[HookCall], Awaitable[None]]
"""An async function of a :class:`HookCall`."""

RECORDED = (StaffroomError, OSError, sqlite3.Error)
"""Failures a hook may have that are recorded, not raised (the room carries on)."""


class Hooks:
    """Registered hooks per point, run in registration order."""

    def __init__(self) -> None:
        self._hooks: dict[HookPoint, list[tuple[str, Hook]]] = {p: [] for p in HookPoint}

    def on(self, point: HookPoint, hook: Hook, *, name: str | None = None) -> None:
        """Run ``hook`` at ``point`` (``name``: shown when it fails; default its __name__)."""
        label = name or str(getattr(hook, "__name__", "hook"))
        if any(label == have for have, _ in self._hooks[point]):
            raise ValueError(f"a hook named {label!r} is already registered at {point}")
        self._hooks[point].append((label, hook))

    def names(self, point: HookPoint) -> list[str]:
        """The hooks registered at ``point``, in the order they run."""
        return [name for name, _ in self._hooks[point]]

    async def run(self, call: HookCall) -> None:
        """Run the hooks of ``call.point``; recorded failures become ``error`` events."""
        for name, hook in self._hooks[call.point]:
            try:
                await hook(call)
            except RECORDED as exc:
                detail = f"{name} ({call.point}) failed: {type(exc).__name__}: {exc}"
                call.events.emit(
                    EventKind.ERROR,
                    "system",
                    {"error": "hook_failed", "hook": name, "detail": detail},
                    id=f"{call.id}-{name}-failed",
                    meta={"point": str(call.point)},
                )
