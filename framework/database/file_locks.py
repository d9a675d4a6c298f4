"""File locks for replicas on a database: a PostgreSQL advisory lock per file of the data folder.

Replicas on several machines share the data folder over NFS or similar, where ``flock`` is
not to be trusted (emulated, local to one client, or missing). So with a database configured
the writers of MEMORY.md, HISTORY.md and the knowledge files exclude each other there:

- **The name** of a file's lock is its path inside the data folder (``memory/pm/alice/
  MEMORY.md``), hashed to the 64-bit key of ``pg_advisory_xact_lock``: two machines that mount
  the folder at different paths take the same lock. A path outside the folder is refused.
- **Held in a transaction** (``pg_advisory_xact_lock``) on a connection of a small pool of its
  own, for the milliseconds of one read-modify-write: the lock ends with the transaction, so it
  cannot outlive the write, and it works behind a transaction-pooling pgbouncer (a
  session-level lock would not). A holder killed with ``kill -9`` closes its connection, and
  the server drops the lock with it.
- **Bounded**: ``lock_timeout`` ends a wait with a :class:`StorageError` naming the file and the
  holder (its replica name, from ``application_name``); ``idle_in_transaction_session_timeout``
  (twice that) ends the session of a holder that stopped talking (a frozen process, a machine
  gone), so its lock does not wait for TCP to notice (hours by default).

Why a synchronous connection: the file stores are blocking code, run in worker threads (and
straight from the CLI); the replica's async pool belongs to one event loop and cannot be
waited on from a thread without going back through that loop, which may be the very thread
waiting. A sync pool works from any thread. It holds at most ``max_size`` connections, opens
them when a file is written and closes them after a minute idle.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from framework.database.pool import INSTALL_HINT, replica_id
from framework.errors import StorageError
from framework.file_locks import LOCK_TIMEOUT

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = ["DatabaseFileLocks", "lock_key"]

log = logging.getLogger("staffroom.file_locks")

_HOLDER = """
SELECT a.application_name AS name, a.pid, extract(epoch FROM now() - a.xact_start) AS held
FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid
LIMIT 1
"""


def lock_key(name: str) -> int:
    """The advisory-lock key of the file ``name`` (its path inside the data folder)."""
    digest = hashlib.sha256(f"staffroom file\0{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class DatabaseFileLocks:
    """Advisory locks on the database at ``url`` for the files under ``root`` (the data folder).

    ``timeout``: seconds a writer waits for a lock, and a holder may sit idle in its
    transaction; ``max_size``: connections at most (this replica's writers of different files
    take turns beyond it)."""

    def __init__(
        self, url: str, *, root: Path, timeout: float = LOCK_TIMEOUT, max_size: int = 4
    ) -> None:
        self.url = url
        self.root = Path(root)
        self.timeout = timeout
        self.max_size = max(1, max_size)
        self.owner = replica_id()
        """This process's name in ``application_name``: what a waiter's timeout names."""
        self._pool: ConnectionPool[Any] | None = None
        self._opening = threading.Lock()

    def name(self, path: Path) -> str:
        """``path`` inside the data folder (``memory/pm/alice/MEMORY.md``): the lock's name."""
        try:
            return Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            raise StorageError(
                f"{path} is outside the data folder {self.root}: its lock on the database is "
                "named by its place in that folder, the one every replica mounts. Keep the "
                "files every replica writes inside the data folder"
            ) from None

    @contextmanager
    def hold(self, path: Path) -> Iterator[None]:
        """Hold ``path``'s advisory lock for the block (the transaction around it).

        A wait past ``timeout`` is a :class:`StorageError` naming the file and its holder. A
        database out of reach raises psycopg's own error (an outage: the server answers 503
        and a queued message is run again). Nothing is created beside the file."""
        from psycopg import Error
        from psycopg.errors import LockNotAvailable

        name = self.name(path)
        key, ms = lock_key(name), max(1, round(self.timeout * 1000))
        # A holder is ended after twice the wait: a waiter times out (and is told who holds
        # the lock) before the holder it waits for is cut off, never instead of it.
        with self._connections().connection() as conn:
            written = False
            try:
                with conn.transaction():
                    # Both settings end with the transaction (SET LOCAL): the pooled
                    # connection goes back as it came.
                    conn.execute(
                        f"SET LOCAL lock_timeout = {ms};"
                        f"SET LOCAL idle_in_transaction_session_timeout = {2 * ms}"
                    )
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
                    yield
                    written = True
            except LockNotAvailable as exc:
                raise StorageError(self._stuck(conn, path, name, key)) from exc
            except Error as exc:
                if not written:
                    raise
                # The block's write is done (renamed into place); only the commit that lets
                # the lock go failed: the session was ended (held past the idle timeout, or
                # the database restarted), and the lock went with it.
                log.warning("%s was written, but its lock (%s) ended early: %s", path, name, exc)

    def _stuck(self, conn: Connection[Any], path: Path, name: str, key: int) -> str:
        """What a waiter that timed out is told: the file, who holds its lock, the fix."""
        unsigned = key & 0xFFFF_FFFF_FFFF_FFFF
        try:
            row = conn.execute(_HOLDER, (unsigned >> 32, unsigned & 0xFFFF_FFFF)).fetchone()
        except Exception:  # the message matters more than who: say it without
            row = None
        who, held = "another replica holds", ""
        if row is not None:
            app = str(row["name"] or "").removeprefix("staffroom ") or "a session"
            who = f"replica {app} (server pid {row['pid']}) has held"
            held = f" for {float(row['held']):.1f} s" if row["held"] is not None else ""
        return (
            f"{path} stayed locked for {self.timeout:g} s: {who} its lock on the database "
            f"({name}){held}. A write takes milliseconds, so that process is stuck: stop it "
            "(its lock goes with its connection) or wait for it, then try again"
        )

    def _connections(self) -> ConnectionPool[Any]:
        with self._opening:
            if self._pool is None:
                self._pool = self._open()
            return self._pool

    def _open(self) -> ConnectionPool[Any]:
        try:
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            raise StorageError(
                f"a database is configured but psycopg is missing: {INSTALL_HINT}"
            ) from exc
        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=0,
            max_size=self.max_size,
            kwargs={
                "autocommit": True,
                "row_factory": dict_row,
                "prepare_threshold": None,  # no prepared statements: pgbouncer-safe
                "application_name": f"staffroom {self.owner}"[:63],
            },
            check=ConnectionPool.check_connection,
            timeout=min(self.timeout, 10.0),
            max_idle=60.0,
            open=False,
            name="staffroom-file-locks",
        )
        pool.open(wait=False)
        return pool

    def close(self) -> None:
        """Close the pool (a later :meth:`hold` opens a new one)."""
        with self._opening:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
