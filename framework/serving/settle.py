"""What the ledger keeps of a message once its run ended: its result, or why it runs again.

- answered: the result is stored for every part of the message (a redelivery gets it);
- the room's lease was lost to another replica mid-run, another replica held the room for
  longer than the run waited for it, or the database went away (a restart): the message goes
  back to the shared queue (state ``queued``, no owner), for whichever replica sweeps next;
- failed: the message is forgotten, so the sender's retry runs it again (the log's ids keep
  the message itself from being stored twice);
- the ledger itself could not be written (a database outage): nothing is changed there, so
  the message stays pending and the replica's sweep runs it again.
"""

from __future__ import annotations

import logging

from framework.database.pool import is_outage
from framework.errors import LeaseLostError, RoomLeasedError, StorageError
from framework.serving.lanes import Item
from framework.serving.ledger import Ledger
from framework.serving.results import PostResult

__all__ = ["settle"]

log = logging.getLogger("staffroom.gateway")


async def settle(ledger: Ledger, key: str, item: Item, outcome: PostResult | BaseException) -> None:
    """Record ``outcome`` of ``item``'s run in session ``key`` and hand it to its waiters.
    Never raises: when the ledger cannot be written (a database outage), the message stays
    pending there and the replica's sweep runs it again (the log's ids keep it once)."""
    try:
        await _record(ledger, key, item, outcome)
    except Exception as exc:
        log.warning("could not record the run of %s in %s: %s", item.message_id, key, exc)
        if not isinstance(outcome, BaseException):
            outcome = StorageError(
                f"the ingest ledger could not be written ({exc}); the message is kept and "
                "runs again once it can"
            )
    if item.done.done():
        return
    if isinstance(outcome, PostResult):
        item.done.set_result(outcome)
    elif _not_its_fault(outcome):
        item.done.set_result(PostResult(key, item.message_id, "queued", "enqueue"))
    else:
        item.done.set_exception(outcome)
        item.done.exception()  # retrieved: a poster that stopped waiting logs nothing


async def _record(
    ledger: Ledger, key: str, item: Item, outcome: PostResult | BaseException
) -> None:
    if isinstance(outcome, PostResult):
        if item.texts:  # a message (a room's bare entry is in no ledger)
            await ledger.update(key, item.message_id, state="done", result=outcome.to_dict())
            for merged in item.merged:
                merged_result = outcome.as_merged(merged).to_dict()
                await ledger.update(key, merged, state="coalesced", result=merged_result)
        return
    if _not_its_fault(outcome):
        # Not the message's fault: it goes back to the queue (a sweep runs it again). A room
        # another replica runs is no reason to drop a message accepted with 202: forgotten,
        # only a sender that retries would ever see it answered.
        log.warning("run of %s in %s gave up the room: %s", item.message_id, key, outcome)
        for mid in [item.message_id, *item.merged]:
            await ledger.requeue(key, mid)
        return
    for mid in [item.message_id, *item.merged]:
        await ledger.forget(key, mid)
    log.warning("run of %s in %s failed: %s", item.message_id, key, outcome)


def _not_its_fault(outcome: BaseException) -> bool:
    """The run could not go on where it was (the room is another replica's, or the database is
    out of reach): the message runs again, elsewhere or later."""
    return isinstance(outcome, LeaseLostError | RoomLeasedError) or is_outage(outcome)
