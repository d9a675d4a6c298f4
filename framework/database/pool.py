"""One connection pool per process: what every PostgreSQL store of a replica shares.

The pool follows what LangGraph's own server learnt (cited in docs/deployment.md): connections
are in autocommit mode with dict rows; each is checked before it is lent (an idle connection
that a firewall, pgbouncer or a restarted server dropped during a long model call is replaced,
not handed out broken: langgraph #5675, #3716; with a round trip only when it rested a while,
``pool_check.py``); and prepared statements are off
(``prepare_threshold=None``), so a transaction-pooling pgbouncer in front works. Its size is
the replica's connection budget (``Settings.database_pool_size``).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from framework.database.pool_check import LoanCheck
from framework.database.url import redact
from framework.errors import StorageError

if TYPE_CHECKING:  # the `postgres` extra, imported when a database is opened
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["Database", "is_outage", "replica_id"]

INSTALL_HINT = "install the PostgreSQL extra: pip install 'staffroom[postgres]'"


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the database could not be reached (a restart, a dropped
    connection, a pool with none to lend): what is worth running again once it is back."""
    try:
        from psycopg import OperationalError
        from psycopg_pool import PoolTimeout
    except ImportError:  # no `postgres` extra: no database, so no outage either
        return False
    return isinstance(exc, OperationalError | PoolTimeout)


def replica_id() -> str:
    """This process's name as a lease owner: host, pid and a random part (a restarted
    process on the same host and pid is another owner: it must take its leases anew)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Database:
    """An open pool on one PostgreSQL database; :meth:`open` it, :meth:`close` it."""

    url: str
    pool: AsyncConnectionPool[Any]
    owner: str = field(default_factory=replica_id)
    """This replica's lease-owner name."""

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        max_size: int = 10,
        timeout: float = 30.0,
        wait: float = 10.0,
        owner: str | None = None,
    ) -> Database:
        """Open a pool of at most ``max_size`` connections on ``url`` and wait (up to
        ``timeout`` seconds) for its first one; later, a request waits at most ``wait``
        seconds for a connection (then it fails as an outage: 503 over HTTP). A
        :class:`StorageError` naming the server (never its password) when it cannot be
        reached or the extra is not installed."""
        try:
            from psycopg.rows import dict_row
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:
            raise StorageError(
                f"a database is configured but psycopg is missing: {INSTALL_HINT}"
            ) from exc
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=max(1, max_size),
            kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": None},
            check=(loans := LoanCheck()).check,
            reset=loans.returned,
            timeout=wait,
            open=False,
            name="staffroom",
        )
        try:
            await pool.open(wait=True, timeout=timeout)
        except Exception as exc:  # psycopg's PoolTimeout / OperationalError: the server's words
            await pool.close()
            raise StorageError(f"cannot reach the database {redact(url)}: {exc}") from exc
        return cls(url=url, pool=pool, owner=owner or replica_id())

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A checked connection from the pool (autocommit; ``conn.transaction()`` for more
        than one statement)."""
        async with self.pool.connection() as conn:
            yield conn

    async def close(self) -> None:
        """Close the pool (its connections are closed; waiting requests fail)."""
        await self.pool.close()
