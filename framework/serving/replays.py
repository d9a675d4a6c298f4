"""The result of a message the ledger knows already: a redelivery's, or a part's that joined a
message another process or replica runs. It is the first run's result, waited for when that
run is still going (here in a lane, or elsewhere: then its result lands in the ledger)."""

from __future__ import annotations

import asyncio

from framework.serving.lanes import POLL, Lane
from framework.serving.ledger import Entry, Ledger
from framework.serving.results import PostResult

__all__ = ["DUPLICATE_WAIT", "ledger_result", "replayed"]

DUPLICATE_WAIT = 120.0
"""Seconds a redelivery of a message another process is still running waits for its result."""


async def replayed(ledger: Ledger, lane: Lane | None, known: Entry, *, wait: bool) -> PostResult:
    """The first result of the message ``known`` names (``duplicate`` set); status
    ``queued`` when ``wait`` is False or it has not come within :data:`DUPLICATE_WAIT`."""
    message_id, session = known.message_id, known.session
    held = lane.holding(message_id) if lane is not None else None
    if held is not None and wait:
        first = await asyncio.shield(held.done)
        return (first if held.message_id == message_id else first.as_merged(message_id)).replayed()
    found = await ledger_result(ledger, session, known.key, DUPLICATE_WAIT if wait else 0)
    if found is not None:
        return found.replayed()
    policy = lane.policy if lane else "enqueue"
    return PostResult(session, message_id, "queued", policy, duplicate=True)


async def ledger_result(
    ledger: Ledger, session: str, key: str, seconds: float | None
) -> PostResult | None:
    """The result the ledger holds for ``key``, waiting up to ``seconds`` (None: as long as
    it takes) for it; None when it has not come, or when the entry is gone (forgotten: the
    run failed, so the sender's retry runs it again)."""
    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    while True:
        entry = await ledger.get(session, key)
        if entry is None:
            return None
        if entry.result is not None:
            return PostResult.from_dict(entry.result)
        if deadline is not None and loop.time() >= deadline:
            return None
        await asyncio.sleep(POLL)
