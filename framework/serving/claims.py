"""A message's names claimed in the ingest ledger together: its ``message_id`` and its
``Idempotency-Key`` each name it, and a retry by either must find the first delivery.

Both names are recorded, or neither: when one turns out known (a redelivery) or refused
(policy ``reject``), the names recorded before it are dropped again. Left behind, such a row
would wait in its room's queue with no lane to run it, and hold up every later message.
"""

from __future__ import annotations

from framework.errors import InputError
from framework.serving.ledger import Admission, Ledger

__all__ = ["claim_names"]


async def claim_names(
    ledger: Ledger,
    session: str,
    keys: list[str],
    *,
    message_id: str,
    author: str,
    text: str,
    reply_to: str | None,
    opening: bool,
    refusing: bool,
) -> Admission:
    """Claim every name in ``keys`` for the message: new (its place: the first name's), the
    entry a name has already (the same person's: another's is an :class:`InputError`), or
    refused (``refusing``: the room answers another message)."""
    taken: list[str] = []
    first = admitted = Admission()
    try:
        for key in keys:
            admitted = await ledger.admit(
                session,
                key,
                message_id=message_id,
                author=author,
                text=text,
                reply_to=reply_to,
                opening=opening,
                unless_answering=refusing,
            )
            known = admitted.known
            if known is not None and known.author != author:
                # The first answer is the first sender's: replaying it to someone else
                # would hand them that person's message and its replies.
                what = "Idempotency-Key" if key.startswith("idem:") else "message_id"
                raise InputError(
                    f"this {what} names another person's message in {session}",
                    field=what,
                    fix=f"send your own {what} (each message its own id)",
                )
            if admitted.seq is None:
                break
            first = first if taken else admitted
            taken.append(key)
        else:
            return first
    except BaseException:
        await _drop(ledger, session, taken)
        raise
    await _drop(ledger, session, taken)
    return admitted


async def _drop(ledger: Ledger, session: str, taken: list[str]) -> None:
    for key in taken:
        await ledger.drop(session, key)
