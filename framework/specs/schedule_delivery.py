"""Which ``deliver:`` targets of ``schedules.yaml`` can be carried out, checked without a server.

Carried out: ``deliver: {adapter, chat, thread}`` for a schedule that starts a room (the fire
runs in the room the chat maps to; see :mod:`framework.schedules.delivery`); ``deliver:
{room}`` and ``deliver: {dm: {employee, user}}`` (the fire's replies are appended to that
session's log, starting no run there; see :mod:`framework.schedules.into_session`). Whether
the room exists is known at fire time only (rooms are data, not project files).

Refused, each with the file, line, field and fix:

- ``deliver: {room}`` or ``{dm}`` naming the very room or DM the schedule starts (its
  replies are there already);
- ``deliver.adapter`` with ``start.dm``: a DM's replies already reach its person's DM on the
  platform when the adapter maps them (``users:`` and ``dm_employee`` or the employee's own
  app), and a channel is not a DM;
- ``deliver.adapter`` with ``start.reflection``: reflections run in sessions of their own;
- ``deliver.adapter`` with a ``start.room.room`` of one's own: the chat's mapping names the
  room, so the id would be ignored.
"""

from __future__ import annotations

from framework.errors import InputError

from .schedules_file import DEFAULT_ROOM, SchedulesFile, ScheduleSpec

__all__ = ["ScheduleDeliveryError", "delivery_problems"]


class ScheduleDeliveryError(InputError):
    """A schedule's ``deliver:`` cannot be carried out as written."""


def delivery_problems(file: SchedulesFile, only: str | None = None) -> list[ScheduleDeliveryError]:
    """The ``deliver:`` targets of ``file`` (of schedule ``only``, if given) that are refused
    (see the module docstring)."""
    problems: list[ScheduleDeliveryError] = []
    for sid, spec in file.schedules.items():
        if only is not None and sid != only:
            continue
        refused = _refusal(spec)
        if refused is None:
            continue
        what, fix, at = refused
        path = ("schedules", sid, *at)
        problems.append(
            ScheduleDeliveryError(
                f"schedule '{sid}': {what}",
                file=file.source,
                line=file.line_of(*path),
                field=".".join(path),
                fix=fix,
            )
        )
    return problems


def _refusal(spec: ScheduleSpec) -> tuple[str, str, tuple[str, ...]] | None:
    deliver = spec.deliver
    if deliver is None:
        return None
    if deliver.kind in ("room", "dm"):
        start, dm = spec.start, deliver.dm
        own_room = start.room is not None and start.room.room == deliver.room
        own_dm = bool(
            start.dm and dm and (start.dm.employee, start.dm.user) == (dm.employee, dm.user)
        )
        if not (own_room or own_dm):
            return None
        return (
            f"`deliver` names the {deliver.kind} the schedule starts: its replies are there "
            "already",
            "remove `deliver`, or name another room or DM",
            ("deliver", deliver.kind),
        )
    if spec.start.dm is not None:
        return (
            "a DM's replies cannot go to a platform chat",
            "remove `deliver`: a DM's replies reach its person's DM on the platform when the "
            "adapter maps them (`users:` and `dm_employee`); or start a room",
            ("deliver", "adapter"),
        )
    if spec.start.reflection is not None:
        return (
            "a reflection runs in sessions of its own and cannot go to a platform chat",
            "remove `deliver`",
            ("deliver", "adapter"),
        )
    if spec.start.room is not None and spec.start.room.room != DEFAULT_ROOM:
        return (
            "`start.room.room` names a room, but the chat's mapping names it",
            "remove `start.room.room` (the adapters config's `groups:` gives the room)",
            ("start", "room", "room"),
        )
    return None
