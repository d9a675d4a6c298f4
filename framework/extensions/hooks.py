"""Hook points: work that runs at moments of a session, registered rather than wired in.

=================== ===================== ==============================================
point               event                 when, and where
=================== ===================== ==============================================
``message``         :class:`MessageRouted` a person's message is routed (inside the run,
                                          before anyone answers)
``reply``           :class:`ReplyLogged`  an employee's reply is logged (inside its turn)
``background``      :class:`BackgroundDue` a post, start or retry has yielded all its
                                          events (in the background, so it never delays
                                          a reply; :meth:`Room.drain` waits for it)
``run_end``         :class:`RunEnded`     a run ends: its SOP completed, a stop word, or
                                          the turn cap (inside the run, before its
                                          ``outcome`` event)
``session_end``     :class:`SessionEnded` the session ends: :meth:`Room.close`, or the next
                                          message after ``Settings.session_idle`` seconds
                                          of silence (before that message)
=================== ===================== ==============================================

A hook is ``async def hook(event, ctx)``: the point's event and the session's
:class:`~framework.extensions.context.HookContext`. Register it with the method named after
its event (``hooks.on_reply_logged(hook)``), so mypy checks that the hook takes that event.

Hooks inside the run re-run with their node after a crash, so they must be idempotent: each
event's ``id`` is deterministic for that purpose. A hook that fails with one of our errors,
an ``OSError`` or a database error is recorded as an ``error`` event (``hook_failed``) and the
room goes on; any other exception is a bug and propagates.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from framework.errors import StaffroomError
from framework.sessions.events import EventKind

if TYPE_CHECKING:
    from framework.extensions.context import HookContext


class HookPoint(StrEnum):
    """Where in a session a hook runs (see the module docstring)."""

    MESSAGE = "message"
    REPLY = "reply"
    BACKGROUND = "background"
    RUN_END = "run_end"
    SESSION_END = "session_end"


@dataclass(frozen=True, slots=True)
class MessageRouted:
    """A person's message was routed (``message``)."""

    id: str
    """The message's id."""
    author: str
    content: str
    message: Mapping[str, Any]
    """The routed message as the room's state holds it (``id``, ``author``, ``content``)."""


@dataclass(frozen=True, slots=True)
class ReplyLogged:
    """An employee's reply was logged (``reply``)."""

    id: str
    """The reply event's id."""
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
class BackgroundDue:
    """A post, start or retry has yielded all its events (``background``)."""

    id: str
    """``bg-`` and the id of the log's last event."""


@dataclass(frozen=True, slots=True)
class RunEnded:
    """An SOP run ended (``run_end``)."""

    id: str
    """The run's epoch."""
    reason: str
    """``sop_complete``, ``stop_word`` or ``max_turns``."""
    state: Mapping[str, Any]
    """The room's control state at the end (epoch, sop, steps, turns)."""


@dataclass(frozen=True, slots=True)
class SessionEnded:
    """A session ended (``session_end``): which span of the log it covered."""

    id: str
    """``end-`` and the id of the session's first event."""
    reason: str
    """``closed`` or ``idle``."""
    first: str
    """Id of the session's first event."""
    last: str
    """Id of its last event before the end."""
    events: int


HookEvent = MessageRouted | ReplyLogged | BackgroundDue | RunEnded | SessionEnded
"""The event of one of the five points."""

E = TypeVar("E", MessageRouted, ReplyLogged, BackgroundDue, RunEnded, SessionEnded)

Hook = Callable[[E, "HookContext"], Awaitable[None]]
"""An async function of a point's event and the session's context."""

RECORDED = (StaffroomError, OSError, sqlite3.Error)
"""Failures a hook may have that are recorded, not raised (the room carries on)."""


class _Point(Generic[E]):
    """The hooks of one point, in registration order."""

    def __init__(self, point: HookPoint) -> None:
        self.point = point
        self.hooks: list[tuple[str, Hook[E]]] = []

    def add(self, hook: Hook[E], name: str | None) -> None:
        label = name or str(getattr(hook, "__name__", "hook"))
        if any(label == have for have, _ in self.hooks):
            raise ValueError(f"a hook named {label!r} is already registered at {self.point}")
        self.hooks.append((label, hook))

    async def run(self, event: E, ctx: HookContext) -> None:
        for name, hook in self.hooks:
            try:
                await hook(event, ctx)
            except RECORDED as exc:
                detail = f"{name} ({self.point}) failed: {type(exc).__name__}: {exc}"
                ctx.events.emit(
                    EventKind.ERROR,
                    "system",
                    {"error": "hook_failed", "hook": name, "detail": detail},
                    id=f"{event.id}-{name}-failed",
                    meta={"point": str(self.point)},
                )


class Hooks:
    """Registered hooks per point, run in registration order."""

    def __init__(self) -> None:
        self._message = _Point[MessageRouted](HookPoint.MESSAGE)
        self._reply = _Point[ReplyLogged](HookPoint.REPLY)
        self._background = _Point[BackgroundDue](HookPoint.BACKGROUND)
        self._run_end = _Point[RunEnded](HookPoint.RUN_END)
        self._session_end = _Point[SessionEnded](HookPoint.SESSION_END)

    def on_message_routed(self, hook: Hook[MessageRouted], *, name: str | None = None) -> None:
        """Run ``hook`` when a person's message is routed (``name``: shown when it fails)."""
        self._message.add(hook, name)

    def on_reply_logged(self, hook: Hook[ReplyLogged], *, name: str | None = None) -> None:
        """Run ``hook`` when an employee's reply is logged."""
        self._reply.add(hook, name)

    def on_background(self, hook: Hook[BackgroundDue], *, name: str | None = None) -> None:
        """Run ``hook`` in the background after a post, start or retry."""
        self._background.add(hook, name)

    def on_run_ended(self, hook: Hook[RunEnded], *, name: str | None = None) -> None:
        """Run ``hook`` when an SOP run ends (before its ``outcome`` event)."""
        self._run_end.add(hook, name)

    def on_session_ended(self, hook: Hook[SessionEnded], *, name: str | None = None) -> None:
        """Run ``hook`` when a session ends (before its ``session_end`` event)."""
        self._session_end.add(hook, name)

    def names(self, point: HookPoint) -> list[str]:
        """The hooks registered at ``point``, in the order they run."""
        return [name for name, _ in self._points()[point].hooks]

    def _points(self) -> dict[HookPoint, _Point[Any]]:
        return {
            HookPoint.MESSAGE: self._message,
            HookPoint.REPLY: self._reply,
            HookPoint.BACKGROUND: self._background,
            HookPoint.RUN_END: self._run_end,
            HookPoint.SESSION_END: self._session_end,
        }

    async def run(self, event: HookEvent, ctx: HookContext) -> None:
        """Run the hooks of ``event``'s point; recorded failures become ``error`` events."""
        match event:
            case MessageRouted():
                await self._message.run(event, ctx)
            case ReplyLogged():
                await self._reply.run(event, ctx)
            case BackgroundDue():
                await self._background.run(event, ctx)
            case RunEnded():
                await self._run_end.run(event, ctx)
            case SessionEnded():
                await self._session_end.run(event, ctx)
