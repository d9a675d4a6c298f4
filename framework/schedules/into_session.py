"""Delivering a fire's result into another session: ``deliver: {room}`` or ``deliver: {dm}``.

The target is a room that exists (its log holds an entry: it was run once) or a DM, opened
with :meth:`Staffroom.dm` (a new one is fine: its first person's message enters it). A room
id that names no room fails the fire before it runs, saying which schedule, field and fix.

What the target's log gets, none of it starting a run there
(:func:`~framework.runtime.appended.append_outside`):

- each reply the fire's employees gave in the session the fire started, as a message by that
  employee, marked ``meta.why = "delivered"`` and ``meta.delivered = {"schedule", "fire",
  "from", "event", "name"}`` (the session and event it came from, the employee's name);
- after the last retry of a failed fire, the notice a chat would get, as a message by
  ``system`` (:data:`NOTICE_AUTHOR`), marked the same way.

Their ids are made from the fire's id and the original's, so delivering again (a fire run
again after a crash, a retry) appends nothing twice. A quiet fire delivers nothing, and
neither does a "nothing to report" reply among others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from framework.errors import UnknownNameError
from framework.runtime.room import Room
from framework.schedules.delivery import schedules_file_of
from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import Channel, SessionKey
from framework.specs.schedule_delivery import ScheduleDeliveryError
from framework.specs.schedules_file import ScheduleSpec

if TYPE_CHECKING:
    from framework.serving.gateway import Gateway
    from framework.staffroom import Staffroom

__all__ = [
    "DELIVERED_WHY",
    "NOTICE_AUTHOR",
    "delivered_id",
    "delivered_notice",
    "delivered_replies",
    "fire_replies",
    "into_session",
    "target_room",
]

DELIVERED_WHY = "delivered"
"""``meta.why`` of a delivered message (a turn's is why its employee spoke)."""
NOTICE_AUTHOR = "system"
"""The author of a delivered failure notice: the framework, as of its other events."""


def into_session(spec: ScheduleSpec) -> bool:
    """Whether ``spec`` delivers into a room or a DM of this project."""
    return spec.deliver is not None and spec.deliver.kind in ("room", "dm")


async def target_room(
    staff: Staffroom, gateway: Gateway | None, name: str, spec: ScheduleSpec
) -> Room:
    """The room or DM ``spec`` delivers into (the gateway's own object when there is one,
    so its run guard is the one the room's runs take); ``ScheduleDeliveryError`` with the
    schedule's file and line when the room does not exist."""
    deliver = spec.deliver
    assert deliver is not None and (deliver.room or deliver.dm)  # into_session(spec)
    if deliver.dm is not None:
        employee, user = deliver.dm.employee, deliver.dm.user
        return await (gateway.open_dm if gateway else staff.dm)(employee, user)
    key = str(SessionKey(Channel.ROOM, deliver.room or ""))
    try:
        return await (gateway.session if gateway else staff.session)(key)
    except UnknownNameError as exc:
        rooms = [str(k) for k in staff.sessions.list_sessions() if k.channel == Channel.ROOM]
        known = ", ".join(k.removeprefix("room:") for k in rooms[:10]) or "none yet"
        file = schedules_file_of(name, spec, staff.settings.project_dir)
        at = ("schedules", name, "deliver", "room")
        raise ScheduleDeliveryError(
            f"schedule '{name}': delivers into room '{deliver.room}', which does not exist "
            "(no room with that id has run in this data folder)",
            file=file.source,
            line=file.line_of(*at),
            field=".".join(at),
            fix=f"run the room once (`staffroom run <scenario> --room {deliver.room}`), or "
            f"name one that exists (rooms: {known})",
        ) from exc


def fire_replies(log: JsonlLog | None, message_id: str, events: Sequence[Event]) -> list[Event]:
    """The replies a fire got: in ``log``, what followed its message (``message_id``) up to
    the next person's message, else (no message: a room entered on its announcement, a
    reflection) ``events``, the run's. Read from the log, a fire run again after a crash
    (which posts nothing new) still finds the replies its first run got."""
    said: Sequence[Event] = events
    if log is not None and log.has(message_id):
        after = log.tail_until(lambda e: e.id == message_id)[1:]
        said = after[: next((i for i, e in enumerate(after) if e.from_person), len(after))]
    return [
        e
        for e in said
        if e.kind == EventKind.MESSAGE
        and not e.from_person
        and not e.meta.get("nothing_to_report")  # a quiet answer is delivered nowhere
        and "delivered" not in e.meta  # delivered there by another schedule: not its reply
    ]


def delivered_id(fire_id: str, session: str, event_id: str) -> str:
    """The id a delivered event gets in its target: one per fire and original (never the
    shape of a turn's id, ``-t0001-msg``, which a rebuild would count as this room's)."""
    key = "\0".join((fire_id, session, event_id))
    return "delivered-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def delivered_replies(
    target: Room, name: str, fire_id: str, replies: Iterable[Event], names: dict[str, str]
) -> list[Event]:
    """``replies`` as the messages ``target`` gets (``names``: employee id -> display name)."""
    return [
        make_event(
            target.key,
            EventKind.MESSAGE,
            e.author,
            e.text,
            id=delivered_id(fire_id, e.session, e.id),
            meta={
                "why": DELIVERED_WHY,
                "delivered": {
                    "schedule": name,
                    "fire": fire_id,
                    "from": e.session,
                    "event": e.id,
                    "name": names.get(e.author, e.author),
                },
            },
        )
        for e in replies
    ]


def delivered_notice(target: Room, name: str, fire_id: str, text: str) -> Event:
    """The failure notice ``text`` of ``fire_id`` as the message ``target`` gets."""
    return make_event(
        target.key,
        EventKind.MESSAGE,
        NOTICE_AUTHOR,
        text,
        id=delivered_id(fire_id, "", "failed"),
        meta={"why": DELIVERED_WHY, "delivered": {"schedule": name, "fire": fire_id}},
    )
