"""The chat platforms as the scheduler delivers to them (``deliver: {adapter, chat, thread}``).

:class:`ScheduledChats` is what the server's running adapters (``http.Adapters``) give the
scheduler, as its :class:`~framework.schedules.delivery.ChatDelivery`: the room a chat maps
to (the adapter's own :class:`~framework.surfaces.adapters.mapping.GroupMapping`, so a person
writing in that chat or thread reaches the same room), a thread opened for a fire, the fire's
replies sent through the platform's :class:`~framework.surfaces.adapters.base.Bridge` (each
once, as any reply is), and a notice from the shared app.
"""

from __future__ import annotations

from collections.abc import Sequence

from framework.errors import InputError
from framework.schedules.delivery import ChatRoom
from framework.sessions.events import Event
from framework.surfaces.adapters.base import Bridge
from framework.surfaces.adapters.mapping import Place
from framework.surfaces.adapters.outgoing import NOTICE_SENDER

__all__ = ["ScheduledChats"]

THREAD_ROOTS = "schedule-threads"
"""The ingest ledger's ``sent`` rows under this name: fire message id -> the thread it opened
(so a fire run again after a crash opens no second thread)."""


class ScheduledChats:
    """The configured platforms' bridges as a :class:`ChatDelivery` (see the module
    docstring); ``bridges``: platform name -> its bridge."""

    bridges: dict[str, Bridge]

    def _bridge(self, adapter: str) -> Bridge:
        bridge = self.bridges.get(adapter)
        if bridge is None:
            configured = ", ".join(sorted(self.bridges)) or "none"
            raise InputError(
                f"no {adapter} adapter runs on this server (configured: {configured})",
                field="deliver.adapter",
                fix=f"add a `{adapter}:` section under `adapters:` in the server config, or "
                "deliver to one that is configured",
            )
        return bridge

    async def room(self, adapter: str, chat: str, thread: str | None) -> ChatRoom:
        """The room the adapter's mapping gives ``chat`` / ``thread`` (as a message said
        there would reach)."""
        bridge = self._bridge(adapter)
        mapping = bridge.adapter.mapping
        group = mapping.group_of(chat)
        if group is None:
            raise InputError(
                f"the {adapter} adapter maps no chat {chat}",
                field="deliver.chat",
                fix=f"add `{chat}: {{scenario: …}}` under `groups:` of `adapters.{adapter}` "
                "in the server config",
            )
        place = Place(chat, thread)
        scope = await bridge.adapter.scope()
        target = mapping.target(place, "scheduler", scope=scope, author="scheduler")
        if target is None or target.room_id is None or target.scenario is None:
            raise InputError(f"the {adapter} adapter maps no room for chat {chat}")
        replies = thread if group.mode != "user" else None
        return ChatRoom(target.room_id, target.scenario, group.mode, replies)

    async def open_thread(self, adapter: str, chat: str, name: str, text: str, uid: str) -> str:
        """Send ``text`` into ``chat`` as a thread's first message (once per ``uid``)."""
        bridge = self._bridge(adapter)
        ledger = bridge.gateway.ledger
        known = await ledger.sent_event(THREAD_ROOTS, uid)
        if known is not None:
            return known
        sent = await bridge.notify(Place(chat), name, text, uid=uid)
        thread = thread_of(adapter, sent)
        await ledger.record_sent(THREAD_ROOTS, uid, thread)
        return thread

    async def send(
        self, adapter: str, chat: str, thread: str | None, key: str, events: Sequence[Event]
    ) -> None:
        """Queue the replies among ``events`` for ``chat`` / ``thread`` (each once)."""
        bridge = self._bridge(adapter)
        for event in events:
            await bridge.send_to(Place(chat, thread), key, event)

    async def notice(
        self, adapter: str, chat: str, thread: str | None, text: str, uid: str
    ) -> None:
        """Send ``text`` to ``chat`` / ``thread`` from the shared app."""
        bridge = self._bridge(adapter)
        language = bridge.gateway.staff.settings.language or "en"
        await bridge.notify(Place(chat, thread), NOTICE_SENDER(language), text, uid=uid)


def thread_of(adapter: str, sent: str) -> str:
    """The thread id of a message the platform gave the id ``sent`` (Slack: the ``ts`` of
    our ``slack-<channel>-<ts>``; Feishu: the message id itself)."""
    return sent.rpartition("-")[2] if adapter == "slack" else sent
