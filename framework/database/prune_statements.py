"""LangGraph's ``keep_latest`` prune of a PostgreSQL thread, with its blob deletes as one.

LangGraph's ``keep_latest`` deletes a pruned room's unused blobs one channel at a time (a
dozen statements a prune); :func:`execute_pruning` runs its statements as its ``_aexecute``
does, but those deletes as one statement. The fenced checkpointer (``fenced_checkpoints.py``)
runs it inside the prune's fenced transaction.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.postgres.base import PRUNE_BLOBS_SQL
from psycopg import AsyncCursor
from psycopg.rows import DictRow

__all__ = ["execute_pruning"]

# LangGraph's PRUNE_BLOBS_SQL statements (one per channel) as one.
_PRUNE_BLOBS_AT_ONCE = """
DELETE FROM checkpoint_blobs AS b
USING unnest(%s::text[], %s::text[]) AS g(channel, version)
WHERE b.thread_id = %s AND b.checkpoint_ns = %s
  AND b.channel = g.channel AND b.version = g.version
"""


async def execute_pruning(cur: AsyncCursor[DictRow], statements: Any) -> None:
    """Run LangGraph's keep_latest ``statements`` as its ``_aexecute`` does (unprepared, rows
    sent back where asked), but its per-channel blob deletes as one statement, sent where the
    next other statement (or the end) comes: they need no answer, and nothing after them in
    the transaction reads blobs."""
    blobs: dict[tuple[str, str], list[tuple[str, str]]] = {}

    async def flush() -> None:
        for (thread_id, ns), pairs in blobs.items():
            channels, versions = [c for c, _ in pairs], [v for _, v in pairs]
            await cur.execute(
                _PRUNE_BLOBS_AT_ONCE, (channels, versions, thread_id, ns), prepare=False
            )
        blobs.clear()

    reply: list[DictRow] | None = None  # what the last statement sent back (None: first)
    while True:
        try:
            sql, params, fetch = next(statements) if reply is None else statements.send(reply)
        except StopIteration:
            break
        reply = []
        if sql == PRUNE_BLOBS_SQL:
            thread_id, ns, channel, versions = params
            blobs.setdefault((thread_id, ns), []).extend((channel, v) for v in versions)
            continue
        await flush()
        await cur.execute(sql, params, prepare=False)
        reply = await cur.fetchall() if fetch else []
    await flush()
