"""One fenced checkpoint write in one round trip instead of one per statement.

A room's run makes a few checkpoint writes per message (a checkpoint per superstep, the
pending writes of each task), and each was ``BEGIN``, the fence check, LangGraph's statements
(``executemany`` sends one per row) and ``COMMIT``: six to nine round trips, each costing the
replica more CPU than the statement costs PostgreSQL. Here a write is one string:

``BEGIN``; the fence, ``staffroom_fence(session, owner, epoch)`` (a function of the lease
migrations: it reads the lease row ``FOR SHARE`` and raises SQLSTATE ``SRL01`` unless this
replica's lease is the live one); LangGraph's statements, bound here (``mogrify``: psycopg's
own quoting); ``COMMIT``. PostgreSQL runs them in order in one transaction and stops at the
first error, leaving the transaction failed: a write whose lease is gone writes nothing (the
fence comes first), and a takeover (which updates the lease row) waits for a write whose
fence has taken the lock, as before. The failed transaction is rolled back here.

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

__all__ = ["FENCE_SQL", "BatchedWrite", "FenceRefused"]

FENCE_SQL = """
SELECT 1 FROM staffroom_leases
WHERE session = %s AND owner = %s AND epoch = %s AND expires_at > now()
FOR SHARE
"""
_FENCE_CALL = "SELECT staffroom_fence(%s, %s, %s)"
_REFUSED = "SRL01"  # the SQLSTATE staffroom_fence raises


class FenceRefused(Exception):
    """The write's fence found this replica's lease gone: nothing was written."""


class BatchedWrite(AsyncClientCursor[DictRow]):
    """A cursor on ``conn`` for one fenced write: :meth:`begin_fenced`, LangGraph's
    statements (kept, not sent), then :meth:`commit`, or :meth:`abandon` on any failure."""

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        super().__init__(conn, row_factory=dict_row)
        self._kept: list[str] = []

    def begin_fenced(self, thread_id: str, owner: str, epoch: int) -> None:
        """Open the write under the lease (``owner``, ``epoch``): the fence goes first in
        what :meth:`commit` sends (nothing is sent now)."""
        self._kept = ["BEGIN", self.mogrify(_FENCE_CALL, (thread_id, owner, epoch))]

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
        """Send ``BEGIN``, the fence, the kept statements and ``COMMIT`` (one round trip);
        :class:`FenceRefused` (the transaction rolled back) when the lease is not ours."""
        statements, self._kept = self._kept, []
        try:
            await super().execute(";\n".join([*statements, "COMMIT"]))
        except Exception as exc:
            if getattr(exc, "sqlstate", None) != _REFUSED:
                raise
            await self.abandon()
            raise FenceRefused(str(exc)) from exc

    async def abandon(self) -> None:
        """Roll the transaction back if it is still open (a failed write keeps nothing)."""
        self._kept = []
        if self.connection.info.transaction_status != TransactionStatus.IDLE:
            await super().execute("ROLLBACK")
