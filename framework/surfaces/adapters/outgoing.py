"""What of a session a chat platform is sent, and which platform message carried which event.

Out (:func:`outgoing`): an employee's message, sent as that employee (one a schedule
delivered from another session by someone not of the room: by the shared app, under their
name); and what the room says about a person's remark ("remark 1, understood as: …", then its
confirmation or drop), sent by the shared app as :data:`NOTICE_SENDER`, so a person in the chat
sees what was understood and can answer it there. The room's other system events (plans,
steps, waits) stay in its history.

Back (:func:`replied_event`): the id the platform gives each sent message is recorded with the
event it carried (in the ingest ledger, kept as long as redeliveries are). A person's message
that replies to a platform message (Slack: a thread reply, ``thread_ts``; Feishu: a reply,
``parent_id``) is posted with ``reply_to`` naming the event that message carried, or the
person's message it replied to; a reply to anything the session does not hold is an ordinary
message. A yes replying to an understood remark confirms it
(:mod:`framework.sop.remark_answers`). Slack threads are flat: in a room of its own thread
(mode ``thread``) every reply names the thread's first message, so a remark there is answered
by naming it ("yes, remark 1").
"""

from __future__ import annotations

from dataclasses import dataclass

from framework.phrases import Phrase
from framework.runtime.room import Room
from framework.serving.gateway import Gateway
from framework.sessions.events import Event, EventKind, client_event_id
from framework.sessions.keys import SessionKey
from framework.sessions.payloads import RemarkPayload, payload_of
from framework.sop.remark_answers import ANSWERED, CONFIRMED, DROPPED, UNCONFIRMED, UNDERSTOOD

NOTICE_SENDER = Phrase(
    en="Staffroom",
    zh="Staffroom",
)
"""The name the room's notices are sent under (by the shared app, as no employee)."""
SHOWN_REMARKS = frozenset({UNDERSTOOD, CONFIRMED, DROPPED, ANSWERED, UNCONFIRMED})
"""Remark statuses a person in the chat is told (a message not read as a correction is not)."""


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One event as a platform message."""

    employee: str
    """Who sends it: an employee id, or "" for a notice (the shared app, as no employee)."""
    name: str
    """The name it is shown under."""
    text: str

    @property
    def notice(self) -> bool:
        """The room's notice, not an employee's turn."""
        return not self.employee


def outgoing(event: Event, room: Room) -> Outgoing | None:
    """``event`` of ``room`` as the platform message it is sent as, or None (not sent)."""
    if event.kind == EventKind.MESSAGE:
        if event.from_person or event.meta.get("nothing_to_report"):  # a quiet fire's: nowhere
            return None
        delivered = event.meta.get("delivered")
        if event.author not in room.participants:
            if not isinstance(delivered, dict):
                return None
            # Delivered by a schedule from another session (a DM's employee, the framework's
            # failure notice): sent by the shared app under the name it was said under.
            name = str(delivered.get("name") or NOTICE_SENDER("en"))
            return Outgoing("", name, event.text)
        return Outgoing(
            event.author, room.display_names.get(event.author, event.author), event.text
        )
    said = payload_of(event)
    if not isinstance(said, RemarkPayload):
        return None
    text, ask = said.text or "", said.ask or ""
    if said.status not in SHOWN_REMARKS or not text:
        return None
    name = NOTICE_SENDER("en" if said.english else "zh")
    return Outgoing("", name, f"{text}\n{ask}" if ask else text)


async def replied_event(gateway: Gateway, key: str, parent: str | None) -> str | None:
    """The id of the event of session ``key`` that the platform message ``parent`` carried (a
    message sent there) or is (a person's message posted there), else None."""
    if not parent:
        return None
    carried = await gateway.ledger.sent_event(key, parent)
    if carried is not None:
        return carried
    posted = client_event_id(parent)  # a platform's message id is a client id in the room
    return posted if gateway.staff.sessions.log(SessionKey.parse(key)).has(posted) else None
