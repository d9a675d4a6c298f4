"""Which session a platform message goes to, and where a session's replies go back.

A group (a Slack channel, a Feishu chat) is mapped in the adapter's config to a scenario and
a mode:

- ``group``: one room for the whole group (``slack-t0001-c0002``);
- ``thread``: one room per thread or topic (``slack-t0001-c0002-1700000000.000100``): a
  message outside a thread starts one, and replies go into it;
- ``user``: one room per person in the group (``feishu-oc_5ce6-ou_84aa``).

Direct messages map to ``Gateway.open_dm(employee, user)``. Room ids are built from the
platform's ids, lowercased, with every character the name rule refuses replaced by ``-``, so
they always pass :func:`framework.names.check_name`. The id is also the way back: a room's
replies are sent to the place its id names, so they reach the platform after a restart too
(no table of routes to keep). A group's ``room:`` gives its room a name of one's own instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from framework.names import NAME_FIX, is_name
from framework.sessions.keys import Channel, SessionKey
from framework.specs.yaml_loader import spec_error

Mode = Literal["group", "thread", "user"]
ANY_GROUP = "*"
"""The ``groups`` key that maps every group not listed by id."""

_UNSAFE = re.compile(r"[^\w@+\-.]")
_DOTS = re.compile(r"\.{2,}")


class GroupDoc(BaseModel):
    """How one group maps to rooms."""

    model_config = ConfigDict(extra="forbid")

    scenario: str = Field(min_length=1, examples=["tech-article"])
    """The scenario its rooms run (an id of the project's scenarios)."""
    mode: Mode = Field(default="group", examples=["thread"])
    """``group``: one room; ``thread``: one room per thread; ``user``: one per person."""
    room: str | None = Field(default=None, examples=["launch-42"])
    """A room id of one's own (thread and user rooms add ``-<thread or user>`` to it)."""

    @field_validator("room")
    @classmethod
    def _room_name(cls, value: str | None) -> str | None:
        if value is not None and not is_name(value):
            raise spec_error(f"invalid room id {value!r}", NAME_FIX)
        return value


class MappingDoc(BaseModel):
    """The mapping part every platform's config shares."""

    model_config = ConfigDict(extra="forbid")

    groups: dict[str, GroupDoc] = Field(default_factory=dict)
    """Group id (Slack channel id, Feishu chat_id, or ``*``) -> how it maps."""
    users: dict[str, str] = Field(default_factory=dict, examples=[{"U0ALICE": "alice"}])
    """Platform user (or bot) id -> the author name rooms and memory know them by."""
    dm_employee: str | None = Field(default=None, examples=["pm"])
    """Who answers direct messages to the shared bot (an employee with its own app answers
    the DMs sent to that app)."""

    @field_validator("users")
    @classmethod
    def _user_names(cls, value: dict[str, str]) -> dict[str, str]:
        for user, name in value.items():
            if not is_name(name):
                raise spec_error(f"invalid name {name!r} for user {user}", NAME_FIX)
        return value

    @model_validator(mode="after")
    def _own_rooms_are_one_group(self) -> Self:
        # A room of one's own names one group: shared by every unlisted group, its replies
        # could not know which group to go back to.
        fallback = self.groups.get(ANY_GROUP)
        if fallback is not None and fallback.room is not None:
            raise spec_error(
                "the '*' group cannot name a room",
                "list the group by its id to give it a room of its own, or drop `room:`",
                at=("groups", ANY_GROUP, "room"),
            )
        return self


@dataclass(frozen=True, slots=True)
class Place:
    """Where on the platform a message was said, or a reply goes."""

    channel: str
    """Slack: a channel (or user) id. Feishu: a chat_id, or a user id of kind ``id_type``."""
    thread: str | None = None
    """Slack: the thread's ``thread_ts``. Feishu: the thread's root message id."""
    direct: bool = False
    """A direct message (p2p chat, Slack ``im``)."""
    id_type: str = "chat_id"
    """Feishu's ``receive_id_type`` for ``channel`` (chat_id, open_id, union_id, user_id)."""


@dataclass(frozen=True, slots=True)
class Target:
    """The session a platform message goes to."""

    key: str
    scenario: str | None = None
    """For a room: the scenario it opens with. None for a DM."""
    room_id: str | None = None
    employee: str | None = None
    """For a DM: who answers."""
    user: str | None = None
    """For a DM: the person (their author name)."""


class GroupMapping:
    """Groups, users and DMs of one platform, both ways.

    ``scope_parts``: how many ids come before the group's in a room id (Slack: 1, the
    team); ``restore`` turns a lowercased platform id back into the platform's spelling
    (Slack ids are upper case); ``user_place`` gives the place a person's DM replies go when
    only their id is known (None: not a user of this platform).
    """

    def __init__(
        self,
        platform: str,
        doc: MappingDoc,
        *,
        scope_parts: int = 0,
        restore: Callable[[str], str] = str,
        user_place: Callable[[str], Place | None] = lambda _: None,
    ) -> None:
        self.platform = platform
        self.doc = doc
        self._scope_parts = scope_parts
        self._restore = restore
        self._user_place = user_place
        self._dm_employees: set[str] = set()
        self._places: dict[str, Place] = {}

    def answer_dms_as(self, employees: set[str]) -> None:
        """Employees with an app of their own, who answer the DMs sent to it."""
        self._dm_employees = set(employees)

    def author(self, *user_ids: str | None) -> str:
        """The name a platform user goes by: the first id ``users`` maps, else the first id
        (made safe for the name rule)."""
        known = [u for u in user_ids if u]
        for user in known:
            if user in self.doc.users:
                return self.doc.users[user]
        return safe_id(known[0] if known else "unknown", lower=False)

    def target(
        self,
        place: Place,
        sender: str,
        *,
        scope: tuple[str, ...] = (),
        root: str | None = None,
        author: str,
        employee: str | None = None,
    ) -> Target | None:
        """The session for a message said at ``place`` by ``sender`` (None: not mapped).

        ``scope``: the ids before the group's (``scope_parts`` of them); ``root``: the
        message's own id as a thread root (a message outside a thread starts one in
        ``thread`` mode); ``employee``: for a DM, the employee whose own app received it.
        """
        if place.direct:
            who = employee or self.doc.dm_employee
            if who is None:
                return None
            key = str(SessionKey(Channel.DM, f"{author}@{who}"))
            self._places[key] = place
            return Target(key, employee=who, user=author)
        found = self._group(place.channel)
        if found is None:
            return None
        group = found[1]
        base = group.room or "-".join(
            safe_id(part) for part in (self.platform, *scope, place.channel)
        )
        if group.mode == "thread":
            thread = place.thread or root
            room_id = f"{base}-{safe_id(thread)}" if thread else base
            reply_to = Place(place.channel, thread, id_type=place.id_type)
        elif group.mode == "user":
            room_id, reply_to = f"{base}-{safe_id(sender)}", Place(place.channel)
        else:
            room_id, reply_to = base, Place(place.channel, id_type=place.id_type)
        room_id = room_id[:128]
        key = str(SessionKey(Channel.ROOM, room_id))
        self._places[key] = reply_to
        return Target(key, scenario=group.scenario, room_id=room_id)

    def place_of(self, key: str) -> Place | None:
        """Where the replies of session ``key`` go, or None when it is not this platform's.

        Sessions that messages from this platform reached are remembered; any other room is
        recognised by its id (see the module docstring), a DM by its person: a name ``users``
        maps, or a platform id, with an employee who answers DMs here.
        """
        known = self._places.get(key)
        if known is not None:
            return known
        parsed = SessionKey.parse(key)
        if parsed.channel == Channel.DM:
            user, _, employee = parsed.chat_id.rpartition("@")
            if employee != self.doc.dm_employee and employee not in self._dm_employees:
                return None
            ids = [uid for uid, name in self.doc.users.items() if name == user]
            return self._user_place(ids[0] if ids else user)
        return self._room_place(parsed.chat_id)

    def _room_place(self, room_id: str) -> Place | None:
        for group_id, group in self.doc.groups.items():
            if group.room is None or group_id == ANY_GROUP:
                continue
            if room_id == group.room or room_id.startswith(group.room + "-"):
                rest = room_id[len(group.room) + 1 :]
                return self._reply_place(group, group_id, rest)
        prefix = safe_id(self.platform) + "-"
        if not room_id.startswith(prefix):
            return None
        parts = room_id[len(prefix) :].split("-")
        if len(parts) <= self._scope_parts:
            return None
        channel = self._restore(parts[self._scope_parts])
        found = self._group(channel)
        if found is None or found[1].room is not None:
            return None
        return self._reply_place(found[1], found[0], "-".join(parts[self._scope_parts + 1 :]))

    def _reply_place(self, group: GroupDoc, channel: str, rest: str) -> Place:
        if group.mode == "thread" and rest:
            return Place(channel, self._restore(rest))
        return Place(channel)

    def group_of(self, channel: str) -> GroupDoc | None:
        """How ``channel`` is mapped (its own entry, else ``*``), or None: not mapped."""
        found = self._group(channel)
        return found[1] if found is not None else None

    def _group(self, channel: str) -> tuple[str, GroupDoc] | None:
        for group_id, group in self.doc.groups.items():
            if group_id.lower() == channel.lower():
                return group_id, group
        fallback = self.doc.groups.get(ANY_GROUP)
        return (channel, fallback) if fallback is not None else None


def safe_id(value: str, *, lower: bool = True) -> str:
    """A platform id as a name: characters the name rule refuses become ``-`` (lowercased)."""
    cleaned = _DOTS.sub("-", _UNSAFE.sub("-", value.lower() if lower else value))
    return cleaned.lstrip(".")[:128] or "x"
