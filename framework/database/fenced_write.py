"""One fenced checkpoint write in two round trips instead of one per statement.

A room's run makes about ten checkpoint writes per message (a checkpoint per superstep, the
pending writes of each task), and each was ``BEGIN``, the fence check, LangGraph's statements
(``executemany`` sends one per row) and ``COMMIT``: six to nine round trips, each costing the
replica more CPU than the statement costs PostgreSQL. Here a write is two:

1. ``BEGIN`` and the fence check (the lease row read ``FOR SHARE``) in one string, answered
   before anything is written: the lock is held from then on, so a takeover waits for this
   write, as before; a write whose lease is gone stops here;
2. LangGraph's statements, bound here (``mogrify``: psycopg's own quoting), and ``COMMIT``,
   sent as one string; PostgreSQL runs them in order in the open transaction, and an error
   in any leaves the transaction failed, so nothing of the write is kept.

:class:`BatchedWrite` is the cursor LangGraph's write code (``aput``, ``aput_writes``,
``adelete_thread``) is given: its ``execute`` and ``executemany`` keep the statements for
:meth:`BatchedWrite.commit`. Those methods never read rows back; one that did would get none.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Self

from psycopg import AsyncClientCursor, AsyncConnection
from psycopg.abc import Params, Query
from psycopg.pq import TransactionStatus
from psycopg.rows import DictRow, dict_row

__all__ = ["BatchedWrite"]

FENCE_SQL = """
SELECT 1 FROM staffroom_leases
WHERE session = %s AND owner = %s AND epoch = %s AND expires_at > now()
FOR SHARE
"""


class BatchedWrite(AsyncClientCursor[DictRow]):
    """A cursor on ``conn`` for one fenced write: :meth:`begin_fenced`, LangGraph's
    statements (kept, not sent), then :meth:`commit`, or :meth:`abandon` on any failure."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        super().__init__(conn, row_factory=dict_row)
        self._kept: list[str] = []

    async def begin_fenced(self, thread_id: str, owner: str, epoch: int) -> bool:
        """Open the transaction and read the lease row ``FOR SHARE`` (one round trip);
        whether this replica's lease (``owner``, ``epoch``) is still the live one."""
        fence = self.mogrify(FENCE_SQL, (thread_id, owner, epoch))
        await super().execute(f"BEGIN; {fence}")
        self.nextset()  # past BEGIN's result, to the fence's
        return await self.fetchone() is not None

    async def execute(
        self,
        query: Query,
        params: Params | None = None,
        *,
        prepare: bool | None = None,
        binary: bool | None = None,
    ) -> Self:
        """Keep the statement, bound, for :meth:`commit`."""
        self._kept.append(self.mogrify(query, params))
        return self

    async def executemany(
        self, query: Query, params_seq: Iterable[Params], *, returning: bool = False
    ) -> None:
        """Keep one statement per set of parameters, bound, for :meth:`commit`."""
        self._kept.extend(self.mogrify(query, params) for params in params_seq)

    async def commit(self) -> None:
        """Send the kept statements and ``COMMIT`` (one round trip)."""
        statements, self._kept = self._kept, []
        await super().execute(";\n".join([*statements, "COMMIT"]))

    async def abandon(self) -> None:
        """Roll the transaction back if it is still open (a failed write keeps nothing)."""
        self._kept = []
        if self.connection.info.transaction_status != TransactionStatus.IDLE:
            await super().execute("ROLLBACK")
