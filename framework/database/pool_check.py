"""The pool's check of a connection before it is lent, with a round trip only where it pays.

A connection that rested in the pool can be dead without the client knowing: a firewall or a
transaction-pooling pgbouncer dropped it during a long model call (langgraph #5675, #3716),
or the server restarted. ``AsyncConnectionPool.check_connection`` finds out with an empty
query, a round trip to the server on every loan. A room's run borrows a connection some
twenty times per message (each checkpoint write, the ledger, the lease), each a moment after
the last loan ended, so that check was a fifth of what the replica sent the server.

So a connection is checked with a round trip when it rested longer than ``idle`` seconds;
one back from its last use a moment ago is lent without, provided nothing is waiting to be
read on its socket (a server that restarted or ended the session has written its goodbye
and closed the socket, which makes it readable) and libpq still sees it idle and open.
"""

from __future__ import annotations

import select
import time
from typing import Any
from weakref import WeakKeyDictionary

__all__ = ["RECHECK_IDLE", "LoanCheck"]

RECHECK_IDLE = 2.0
"""Seconds a connection may rest in the pool and still be lent without a round trip."""


class LoanCheck:
    """``check`` and ``reset`` callbacks of an ``AsyncConnectionPool``: the pool calls
    :meth:`returned` when a connection comes back, :meth:`check` before lending one."""

    def __init__(self, idle: float = RECHECK_IDLE) -> None:
        self.idle = idle
        self._back: WeakKeyDictionary[Any, float] = WeakKeyDictionary()

    async def returned(self, conn: Any) -> None:
        """Note when ``conn`` came back to the pool (the pool's ``reset`` callback)."""
        self._back[conn] = time.monotonic()

    async def check(self, conn: Any) -> None:
        """Raise when ``conn`` is not usable (the pool then replaces it); a round trip unless
        it came back a moment ago and looks sound."""
        from psycopg_pool import AsyncConnectionPool

        back = self._back.get(conn)
        if back is not None and time.monotonic() - back < self.idle and _looks_sound(conn):
            return
        await AsyncConnectionPool.check_connection(conn)


def _looks_sound(conn: Any) -> bool:
    """No round trip: libpq sees the connection open and idle, and its socket has nothing to
    read (an idle session is sent nothing, unless the server is ending it)."""
    from psycopg.pq import ConnStatus, TransactionStatus

    if conn.closed or conn.broken:
        return False
    pgconn = conn.pgconn
    if pgconn.status != ConnStatus.OK or pgconn.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        readable, _, _ = select.select([pgconn.socket], [], [], 0)
    except (OSError, ValueError):  # no socket any more
        return False
    return not readable
