"""What the ledger keeps of a message once its run ended: its result, or why it runs again.

- answered: the result is stored for every part of the message (a redelivery gets it);
- the room's lease was lost to another replica mid-run: the message goes back to the shared
  queue (state ``queued``, no owner), for whichever replica sweeps next;
- failed: the message is forgotten, so the sender's retry runs it again (the log's ids keep
  the message itself from being stored twice).
"""

from __future__ import annotations

import logging

from framework.errors import LeaseLostError
from framework.serving.lanes import Item
from framework.serving.ledger import Ledger
from framework.serving.results import PostResult

__all__ = ["settle"]

log = logging.getLogger("staffroom.gateway")


async def settle(ledger: Ledger, key: str, item: Item, outcome: PostResult | BaseException) -> None:
    """Record ``outcome`` of ``item``'s run in session ``key`` and hand it to its waiters."""
    if isinstance(outcome, PostResult):
        if item.texts:  # a message (a room's bare entry is in no ledger)
            await ledger.update(key, item.message_id, state="done", result=outcome.to_dict())
            for merged in item.merged:
                merged_result = outcome.as_merged(merged).to_dict()
                await ledger.update(key, merged, state="coalesced", result=merged_result)
        if not item.done.done():
            item.done.set_result(outcome)
        return
    if isinstance(outcome, LeaseLostError):
        for mid in [item.message_id, *item.merged]:
            await ledger.requeue(key, mid)
        log.warning("run of %s in %s gave up the room: %s", item.message_id, key, outcome)
        if not item.done.done():
            item.done.set_result(PostResult(key, item.message_id, "queued", "enqueue"))
        return
    for mid in [item.message_id, *item.merged]:
        await ledger.forget(key, mid)
    log.warning("run of %s in %s failed: %s", item.message_id, key, outcome)
    if not item.done.done():
        item.done.set_exception(outcome)
        item.done.exception()  # retrieved: a poster that stopped waiting logs nothing
