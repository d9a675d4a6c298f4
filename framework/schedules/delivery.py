"""Where a fire's result goes when its schedule says ``deliver:``, as the schedules see it.

The chat platforms live in a layer above this one (``framework/surfaces/adapters``), so the
scheduler knows them only as :class:`ChatDelivery`, which the server passes in (the adapters
it runs implement it). Without a server (``staffroom schedules run``) there is none, and a
fire that delivers to a platform fails, saying so (:data:`NO_PLATFORMS`).

What a delivery to ``{adapter, chat, thread}`` means:

- a ``start.room`` fire runs in the room the adapter's mapping gives that chat (and thread),
  so its replies reach the chat and a person answering there reaches the same room; the
  room's scenario must be the one the chat is mapped to;
- a thread given: the replies go into it; none, in a ``group`` mode chat: into the channel;
  none, in a ``thread`` mode chat: each fire opens a thread of its own (its message, sent by
  the shared app, is the thread's first message) and its replies go into it;
- a fire that fails after its retries sends :data:`FAILED_NOTICE` there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from framework.errors import InputError
from framework.phrases import Phrase
from framework.sessions.events import Event
from framework.specs.schedule_delivery import ScheduleDeliveryError, delivery_problems
from framework.specs.schedules_file import SchedulesFile, ScheduleSpec, load_schedules

__all__ = [
    "FAILED_NOTICE",
    "NEW_THREAD",
    "NO_PLATFORMS",
    "ChatDelivery",
    "ChatRoom",
    "delivery_refusal",
    "scenario_mismatch",
    "schedules_file_of",
]

FAILED_NOTICE = Phrase(
    en="Scheduled {name} (due {due}) failed after {attempts} attempt(s): {reason}",
    zh="定时任务 {name}（应于 {due} 运行）尝试 {attempts} 次后失败：{reason}",
)
"""What a failed fire's delivery target is told, after its last retry."""
NEW_THREAD = Phrase(en="Scheduled {name} ({due})", zh="定时任务 {name}（{due}）")
"""The first message of a thread a fire opens when its schedule gives no message."""
NO_PLATFORMS = Phrase(
    en="schedule {name} delivers to {adapter}, which only a server reaches: run it with "
    "`staffroom serve` and the adapters config (`staffroom schedules run` has no chat platforms)",
    zh="定时任务 {name} 投递到 {adapter}，只有服务器能连到它：请用 `staffroom serve` 并配置 "
    "adapters 运行（`staffroom schedules run` 不连接聊天平台）",
)


@dataclass(frozen=True, slots=True)
class ChatRoom:
    """The room a platform chat (or thread) maps to, and how it is mapped."""

    room_id: str
    scenario: str
    """The scenario the adapters config maps the chat to."""
    mode: Literal["group", "thread", "user"]
    thread: str | None
    """The thread the room's replies go into (None: the chat itself)."""


@runtime_checkable
class ChatDelivery(Protocol):
    """The chat platforms a server runs, as a scheduled fire uses them."""

    async def room(self, adapter: str, chat: str, thread: str | None) -> ChatRoom:
        """The room the mapping of ``adapter`` gives ``chat`` (and ``thread``).

        Raises ``InputError`` when the adapter is not configured or does not map the chat.
        """
        ...

    async def open_thread(self, adapter: str, chat: str, name: str, text: str, uid: str) -> str:
        """Send ``text`` (shown as ``name``) into ``chat`` as the first message of a thread;
        the thread's id. The same ``uid`` again (a fire run again) opens no second one."""
        ...

    async def send(
        self, adapter: str, chat: str, thread: str | None, key: str, events: Sequence[Event]
    ) -> None:
        """Send what of ``events`` (of session ``key``) goes out to ``chat`` / ``thread``,
        each once (a quiet fire's "nothing to report" is not sent)."""
        ...

    async def notice(
        self, adapter: str, chat: str, thread: str | None, text: str, uid: str
    ) -> None:
        """Send ``text`` there as the shared app (no employee)."""
        ...


def schedules_file_of(name: str, spec: ScheduleSpec, project: Path) -> SchedulesFile:
    """The schedules file as it is now (for its lines), else ``spec`` alone (a broken edit)."""
    try:
        file = load_schedules(project)
    except InputError:
        file = None
    if file is None or file.schedules.get(name) != spec:
        return SchedulesFile(schedules={name: spec})
    return file


def delivery_refusal(name: str, spec: ScheduleSpec, project: Path) -> InputError | None:
    """Why ``spec``'s ``deliver`` cannot be carried out (``file:line``), or None."""
    if spec.deliver is None:
        return None
    refused = delivery_problems(schedules_file_of(name, spec, project), only=name)
    return refused[0] if refused else None


def scenario_mismatch(
    name: str, spec: ScheduleSpec, room: ChatRoom, project: Path
) -> ScheduleDeliveryError | None:
    """Why a room fire of ``spec`` cannot run in the chat's ``room``: another scenario, or a
    chat mapped a room per person; None when it can."""
    scenario = spec.start.room.scenario if spec.start.room else ""
    at: tuple[str, ...] = ("schedules", name, "start", "room", "scenario")
    if room.mode == "thread" and room.thread is None and spec.quiet:
        at = ("schedules", name, "quiet")
        what = "`quiet` with a chat in `thread` mode and no `deliver.thread`: each fire would "
        what += "open a thread with its message even when there is nothing to report"
        fix = "give `deliver.thread`, map the chat in `group` mode, or remove `quiet`"
    elif room.mode == "user":
        what = "the chat is mapped in `user` mode (a room per person), so no one room is its"
        fix = "map the chat in `group` or `thread` mode in the adapters config"
    elif room.scenario != scenario:
        what = f"the chat runs scenario '{room.scenario}' (adapters config), not '{scenario}'"
        fix = f"use `scenario: {room.scenario}`, or map the chat to '{scenario}'"
    else:
        return None
    file = schedules_file_of(name, spec, project)
    return ScheduleDeliveryError(
        f"schedule '{name}': {what}",
        file=file.source,
        line=file.line_of(*at),
        field=".".join(at),
        fix=fix,
    )
