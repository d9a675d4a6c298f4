"""What a post through the gateway returns, and where a session stands for a surface."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from framework.runtime.room_status import RoomStatus
from framework.sessions.events import Event

STATUSES = ("done", "interrupted", "queued", "coalesced", "rejected")


@dataclass(frozen=True, slots=True)
class PostResult:
    """The result of one posted message (the same on every redelivery of it)."""

    session: str
    message_id: str
    """The message's id as its poster knows it. A platform's or client's ``message_id``
    lives in their namespace: the event's id is ``client_event_id(message_id)`` (in a log
    from before: the id itself), with this id in ``meta.client_id``. Without one, the
    gateway makes the id (from an ``Idempotency-Key`` by hash), and it is the event's id."""
    status: str
    """``done``: its run finished (replies in ``events``); ``interrupted``: a newer message
    stopped its run between turns; ``queued``: accepted durably, not run yet (``wait``
    False); ``coalesced``: merged into ``merged_into``, whose run answered both;
    ``rejected``: the room was busy and its policy is ``reject`` (``room`` says where it
    stands)."""
    policy: str
    events: list[Event] = field(default_factory=list)
    """The message event and every event its run caused."""
    duplicate: bool = False
    """A redelivery: this is the first delivery's result; nothing was stored or run again."""
    merged_into: str | None = None
    room: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data (events as :meth:`Event.to_dict`)."""
        return {
            "session": self.session,
            "message_id": self.message_id,
            "status": self.status,
            "policy": self.policy,
            "events": [e.to_dict() for e in self.events],
            "duplicate": self.duplicate,
            "merged_into": self.merged_into,
            "room": self.room,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PostResult:
        """Read back what :meth:`to_dict` wrote (the ledger keeps it so)."""
        return cls(
            session=str(data["session"]),
            message_id=str(data["message_id"]),
            status=str(data["status"]),
            policy=str(data["policy"]),
            events=[Event.from_dict(e) for e in data.get("events") or []],
            duplicate=bool(data.get("duplicate")),
            merged_into=data.get("merged_into"),
            room=data.get("room"),
        )

    def replayed(self) -> PostResult:
        """This result as a redelivery gets it."""
        return replace(self, duplicate=True)

    def as_merged(self, message_id: str) -> PostResult:
        """This result as the message ``message_id``, coalesced into this one, gets it."""
        return PostResult(
            self.session, message_id, "coalesced", self.policy, self.events, False, self.message_id
        )


@dataclass(frozen=True, slots=True)
class SessionState:
    """A session as a surface shows it: the room's status plus the gateway's queue."""

    session: str
    scenario: str
    room: RoomStatus
    policy: str
    busy: bool
    """A run is under way (here, or on any replica sharing the database)."""
    queued: int
    """Messages accepted and waiting for their turn, whichever replica took them."""
    participants: list[str]
    humans: list[str]
    display_names: dict[str, str]
    sop: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data."""
        return {
            "session": self.session,
            "scenario": self.scenario,
            "room": self.room.to_dict(),
            "policy": self.policy,
            "busy": self.busy,
            "queued": self.queued,
            "participants": self.participants,
            "humans": self.humans,
            "display_names": self.display_names,
            "sop": self.sop,
        }
