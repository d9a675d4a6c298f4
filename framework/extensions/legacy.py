"""The previous release's hook API, kept working for one release (deprecated).

Hooks written as ``async def hook(call: HookCall)`` and registered with
``extensions.hooks.on(HookPoint.X, hook)`` still run: each is wrapped into a hook of the
point's typed event. ``call.room`` still gives the room's collaborators as before (its
``settings`` is the process-wide ``Settings``) but warns: use the hook's
:class:`~framework.extensions.context.HookContext` instead (``docs/extensions.md``).
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from framework.extensions.context import HookContext
from framework.extensions.hooks import (
    BackgroundDue,
    HookEvent,
    HookPoint,
    Hooks,
    MessageRouted,
    ReplyLogged,
    RunEnded,
    SessionEnded,
)
from framework.extensions.sink import EventSink

ROOM_DEPRECATED = (
    "HookCall.room is deprecated and goes in the next release: a hook is now "
    "`async def hook(event, ctx)` registered with extensions.hooks.on_<event>(hook); "
    "read the session from ctx (ctx.key, ctx.log, ctx.scenario_settings, ctx.model(employee)) "
    "and capture your own stores when you register (see docs/extensions.md)"
)
ON_DEPRECATED = (
    "extensions.hooks.on(HookPoint.{point}, ...) is deprecated and goes in the next release: "
    "use extensions.hooks.{method}(hook) with `async def hook(event, ctx)` "
    "(see docs/extensions.md)"
)
METHOD_OF = {
    HookPoint.MESSAGE: "on_message_routed",
    HookPoint.REPLY: "on_reply_logged",
    HookPoint.BACKGROUND: "on_background",
    HookPoint.RUN_END: "on_run_ended",
    HookPoint.SESSION_END: "on_session_ended",
}


@runtime_checkable
class HoldsRoom(Protocol):
    """A context that can still hand out the whole room (the runtime's, for this shim)."""

    @property
    def legacy_room(self) -> object:
        """The room's collaborators, as ``HookCall.room`` gave them."""
        ...


@dataclass(frozen=True, slots=True)
class RunEnd:
    """Deprecated: how an SOP run ended (now :class:`RunEnded`)."""

    reason: str
    state: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SessionEnd:
    """Deprecated: which span of the log a session covered (now :class:`SessionEnded`)."""

    reason: str
    first: str
    last: str
    events: int


Reply = ReplyLogged
"""Deprecated name of :class:`ReplyLogged` (what ``HookCall.reply`` holds)."""


@dataclass(frozen=True, slots=True)
class HookCall:
    """Deprecated: what an old-style hook is given (see the module docstring)."""

    point: HookPoint
    context: HookContext
    events: EventSink
    id: str
    message: Mapping[str, Any] | None = None
    reply: Reply | None = None
    run: RunEnd | None = None
    session: SessionEnd | None = None

    @property
    def room(self) -> Any:
        """Deprecated: the room's collaborators (use the context of a new-style hook)."""
        warnings.warn(ROOM_DEPRECATED, DeprecationWarning, stacklevel=2)
        if isinstance(self.context, HoldsRoom):
            return self.context.legacy_room
        return self.context


LegacyHook = Callable[[HookCall], Awaitable[None]]
"""An old-style hook: an async function of a :class:`HookCall`."""


def _call(point: HookPoint, event: HookEvent, ctx: HookContext) -> HookCall:
    match event:
        case MessageRouted():
            return HookCall(point, ctx, ctx.events, event.id, message=event.message)
        case ReplyLogged():
            return HookCall(point, ctx, ctx.events, event.id, reply=event)
        case RunEnded():
            run = RunEnd(reason=event.reason, state=event.state)
            return HookCall(point, ctx, ctx.events, event.id, run=run)
        case SessionEnded():
            ended = SessionEnd(event.reason, event.first, event.last, event.events)
            return HookCall(point, ctx, ctx.events, event.id, session=ended)
        case BackgroundDue():
            return HookCall(point, ctx, ctx.events, event.id)


class HooksWithShim(Hooks):
    """:class:`Hooks`, plus the previous release's ``on(point, hook)`` (deprecated)."""

    def on(self, point: HookPoint, hook: LegacyHook, *, name: str | None = None) -> None:
        """Deprecated: run an old-style ``hook(call)`` at ``point``.

        Use the ``on_<event>`` method of the point instead (``docs/extensions.md``); this
        keeps hooks written for the previous release running until the next one.
        """
        warnings.warn(
            ON_DEPRECATED.format(point=point.name, method=METHOD_OF[point]),
            DeprecationWarning,
            stacklevel=2,
        )
        label = name or str(getattr(hook, "__name__", "hook"))

        async def message(event: MessageRouted, ctx: HookContext) -> None:
            await hook(_call(point, event, ctx))

        async def reply(event: ReplyLogged, ctx: HookContext) -> None:
            await hook(_call(point, event, ctx))

        async def background(event: BackgroundDue, ctx: HookContext) -> None:
            await hook(_call(point, event, ctx))

        async def run_end(event: RunEnded, ctx: HookContext) -> None:
            await hook(_call(point, event, ctx))

        async def session_end(event: SessionEnded, ctx: HookContext) -> None:
            await hook(_call(point, event, ctx))

        match point:
            case HookPoint.MESSAGE:
                self.on_message_routed(message, name=label)
            case HookPoint.REPLY:
                self.on_reply_logged(reply, name=label)
            case HookPoint.BACKGROUND:
                self.on_background(background, name=label)
            case HookPoint.RUN_END:
                self.on_run_ended(run_end, name=label)
            case HookPoint.SESSION_END:
                self.on_session_ended(session_end, name=label)
