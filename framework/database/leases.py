"""Room leases: which replica runs a room (session) right now, and its fencing epoch.

Several `staffroom serve` replicas share one database; a room must be run by one of them at a
time. A replica takes a room's lease (a row in ``staffroom_leases``) for ``seconds`` and
renews it while it runs the room; when it stops renewing (killed, paused, partitioned) the
lease expires and another replica may take the room over. Every takeover bumps the row's
``epoch``, so a replica that comes back from a pause holds a stale epoch and its writes are
refused (the fenced checkpointer, ``fenced_checkpoints.py``, checks owner and epoch in the
same transaction as each write: a lease alone cannot stop a paused writer, langgraph #8796).

All expiry arithmetic uses the database's clock (``now()``), never the replica's: machines'
clocks differ, the database is the one clock every replica sees.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from framework.database.migrations import Migration
from framework.database.pool import Database
from framework.errors import LeaseLostError, RoomLeasedError

__all__ = ["LEASE_MIGRATIONS", "Fence", "HeldLease", "Lease", "Leases"]

log = logging.getLogger("staffroom.leases")

LEASE_MIGRATIONS: list[Migration] = [
    Migration(
        "leases",
        1,
        """
        CREATE TABLE IF NOT EXISTS staffroom_leases (
            session TEXT PRIMARY KEY,
            owner TEXT NOT NULL,
            epoch BIGINT NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL,
            taken_at TIMESTAMPTZ NOT NULL
        )
        """,
    ),
    # The fence of a checkpoint write as one statement that fails, so a write can be sent
    # whole behind it in one round trip (fenced_write.py): the lease row read FOR SHARE,
    # and an error (SQLSTATE SRL01) that aborts the write when it is not this replica's.
    Migration(
        "leases",
        2,
        """
        CREATE OR REPLACE FUNCTION staffroom_fence(p_session TEXT, p_owner TEXT, p_epoch BIGINT)
        RETURNS void LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM 1 FROM staffroom_leases
            WHERE session = p_session AND owner = p_owner AND epoch = p_epoch
              AND expires_at > now()
            FOR SHARE;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'the lease on % is not held at epoch %', p_session, p_epoch
                    USING ERRCODE = 'SRL01';
            END IF;
        END $$
        """,
    ),
]

_COLUMNS = "session, owner, epoch, expires_at"

# One statement, so concurrent takers are ordered by the row lock of ON CONFLICT: the WHERE is
# evaluated on the row as the winner left it, and exactly one live owner comes out. The same
# owner taking the room again keeps the epoch: nobody else wrote in between (a takeover would
# have changed the owner), and one process never runs a room twice at once (its run lock), so
# a room run again and again by one replica is not re-fenced (nor its log re-marked) each time.
_ACQUIRE = f"""
INSERT INTO staffroom_leases AS l (session, owner, epoch, expires_at, taken_at)
VALUES (%(session)s, %(owner)s, 1, now() + make_interval(secs => %(secs)s), now())
ON CONFLICT (session) DO UPDATE SET
    owner = EXCLUDED.owner,
    epoch = CASE WHEN l.owner = EXCLUDED.owner THEN l.epoch ELSE l.epoch + 1 END,
    expires_at = EXCLUDED.expires_at,
    taken_at = CASE WHEN l.owner = EXCLUDED.owner AND l.expires_at > now()
                    THEN l.taken_at ELSE now() END
WHERE l.expires_at <= now() OR l.owner = EXCLUDED.owner
RETURNING {_COLUMNS}
"""

_RENEW = f"""
UPDATE staffroom_leases SET expires_at = now() + make_interval(secs => %(secs)s)
WHERE session = %(session)s AND owner = %(owner)s AND epoch = %(epoch)s AND expires_at > now()
RETURNING {_COLUMNS}
"""

# The epoch stays: the next taker bumps it, so this holder's late writes stay refused.
_RELEASE = """
UPDATE staffroom_leases SET expires_at = now()
WHERE session = %(session)s AND owner = %(owner)s AND epoch = %(epoch)s AND expires_at > now()
"""

_HOLDER = f"SELECT {_COLUMNS} FROM staffroom_leases WHERE session = %s AND expires_at > now()"
_HOLDERS = f"SELECT {_COLUMNS} FROM staffroom_leases WHERE expires_at > now() ORDER BY session"


@dataclass(frozen=True)
class Lease:
    """A room's lease as the database granted it: who, which epoch, until when (db clock)."""

    session: str
    owner: str
    epoch: int
    expires_at: datetime


class Fence(Protocol):
    """What a held lease keeps informed of its current lease (the fenced checkpointer)."""

    def fence(self, thread_id: str, lease: Lease) -> None:
        """Writes to ``thread_id`` are fenced by ``lease`` from now on."""

    def unfence(self, thread_id: str) -> None:
        """Writes to ``thread_id`` are refused from now on."""


def _lease(row: dict[str, Any]) -> Lease:
    return Lease(row["session"], row["owner"], int(row["epoch"]), row["expires_at"])


class Leases:
    """Room leases of one replica (owner ``db.owner``), each lasting ``seconds`` unrenewed."""

    def __init__(self, db: Database, *, seconds: float) -> None:
        self.db = db
        self.seconds = float(seconds)

    async def _one(self, sql: str, params: Any) -> Lease | None:
        async with self.db.connection() as conn:
            row = await (await conn.execute(sql, params)).fetchone()
        return _lease(row) if row is not None else None

    async def acquire(self, session: str) -> Lease | None:
        """Take ``session``'s lease (new: epoch 1; another owner's, expired: epoch + 1; ours,
        live or not: same epoch); None while another owner's lease is live."""
        return await self._one(
            _ACQUIRE, {"session": session, "owner": self.db.owner, "secs": self.seconds}
        )

    async def renew(self, lease: Lease) -> Lease | None:
        """Extend ``lease`` by ``seconds`` if it is still ours and live; None: it is lost."""
        return await self._one(
            _RENEW,
            {
                "session": lease.session,
                "owner": lease.owner,
                "epoch": lease.epoch,
                "secs": self.seconds,
            },
        )

    async def release(self, lease: Lease) -> None:
        """Expire ``lease`` now (if still ours), so another replica may take the room at once."""
        params = {"session": lease.session, "owner": lease.owner, "epoch": lease.epoch}
        async with self.db.connection() as conn:
            await conn.execute(_RELEASE, params)

    async def holder(self, session: str) -> Lease | None:
        """The live lease on ``session``, whoever holds it; None when nobody does."""
        return await self._one(_HOLDER, (session,))

    async def holders(self) -> list[Lease]:
        """Every live lease, by session (for `staffroom doctor` and status pages)."""
        async with self.db.connection() as conn:
            rows = await (await conn.execute(_HOLDERS)).fetchall()
        return [_lease(row) for row in rows]

    @asynccontextmanager
    async def hold(
        self, session: str, *, wait: float, fence: Fence | None = None
    ) -> AsyncIterator[HeldLease]:
        """Hold ``session``'s lease for the block: take it (retrying for up to ``wait``
        seconds, then :class:`RoomLeasedError` naming the holder), renew it every ``seconds``/3
        in the background, release it on exit. ``held.lost`` is set when a renewal fails;
        ``fence`` (the fenced checkpointer) is kept fenced by the current lease meanwhile."""
        lease, sent = await self._take(session, wait)
        held = HeldLease(lease, sent + self.seconds)
        if fence is not None:
            fence.fence(session, lease)
        renewing = asyncio.create_task(self._keep(held, fence), name=f"lease-renew:{session}")
        try:
            yield held
        finally:
            held.released = True  # the renewals stop at their next turn, whatever comes below
            renewing.cancel()
            try:
                # Bounded, and never swallowing a cancellation of this task: a renewal that
                # ignored its stop would otherwise hold the room (and this run) for ever.
                await _stopped(renewing, within=self.seconds, what=str(held))
            finally:
                if fence is not None:
                    fence.unfence(session)
            try:
                await self.release(held.lease)
            except Exception as exc:  # it expires by itself; the next taker bumps the epoch
                log.warning("could not release the lease on room %s: %s", session, exc)

    async def _take(self, session: str, wait: float) -> tuple[Lease, float]:
        """The lease, and the monotonic time the request that got it was sent."""
        deadline = time.monotonic() + max(0.0, wait)
        pause = min(0.5, self.seconds / 4)
        while True:
            sent = time.monotonic()
            lease = await self.acquire(session)
            if lease is not None:
                return lease, sent
            left = deadline - time.monotonic()
            if left <= 0:
                break
            await asyncio.sleep(min(pause, left))
        holder = await self.holder(session)
        who = holder.owner if holder is not None else "another replica"
        raise RoomLeasedError(
            f"room {session} is being run by replica {who}; it is free again when that "
            f"replica closes it, or {self.seconds:g} s after that replica stops renewing its "
            "lease: send the request to that replica, or try again later"
        )

    async def _keep(self, held: HeldLease, fence: Fence | None) -> None:
        every = self.seconds / 3
        # Measured from when the last successful renewal was *sent*: the database may have
        # granted it later, never earlier, so this replica gives up no later than the lease
        # ends, and a replica that cannot reach the database gives the room up in time.
        valid_until = held.valid_until
        while not held.released:
            await asyncio.sleep(every)
            sent = time.monotonic()
            left = valid_until - sent
            if left <= 0:  # this process was paused (or starved) past the lease's end
                log.warning("lost the lease on room %s: not renewed in time", held)
                renewed = None
            else:
                try:
                    # asyncio.timeout, not wait_for: on Python 3.11, wait_for cancelled just as
                    # its call's answer comes in returns the answer (cpython #86296), so the
                    # stop at the end of a run was lost and this loop renewed the room for ever.
                    async with asyncio.timeout(left):
                        renewed = await self.renew(held.lease)
                except Exception as exc:  # TimeoutError included: a hung call is a failed one
                    if time.monotonic() < valid_until:
                        log.warning("renewing the lease on room %s failed, retrying: %s", held, exc)
                        continue
                    said = str(exc) or type(exc).__name__
                    log.warning("lost the lease on room %s: database unreachable: %s", held, said)
                    renewed = None
            if held.released:  # the run ended meanwhile: its fence is gone, leave it so
                return
            if renewed is None:
                if fence is not None:
                    fence.unfence(held.lease.session)
                held.lost.set()
                return
            held.lease = renewed
            valid_until = held.valid_until = sent + self.seconds
            if fence is not None:
                fence.fence(renewed.session, renewed)


async def _stopped(task: asyncio.Task[None], *, within: float, what: str) -> None:
    """Wait (at most ``within`` seconds) for the cancelled renewal ``task`` to end; log what
    it raised, or that it did not end (its loop still stops at its next turn)."""
    done, _ = await asyncio.wait({task}, timeout=within)
    if not done:
        log.warning("the renewals of the lease on room %s did not stop in %g s", what, within)
    elif not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("renewing the lease on room %s failed: %r", what, exc)


class HeldLease:
    """A lease :meth:`Leases.hold` keeps renewed: ``lease`` is the current one, ``lost`` is
    set when a renewal failed (another replica took the room, or the database was out of
    reach for longer than the lease): stop running the room then."""

    def __init__(self, lease: Lease, valid_until: float) -> None:
        self.lease = lease
        self.lost = asyncio.Event()
        self.valid_until = valid_until
        """Monotonic time by which the lease ends unless renewed (measured from when the
        last granted request was sent: the database granted it no earlier)."""
        self.released = False
        """Given back at the end of the run (what the room writes after that is fenced by
        the epoch alone: readers drop it once another replica has taken the room)."""

    @property
    def epoch(self) -> int:
        """The fencing epoch (what the session log stamps on each line)."""
        return self.lease.epoch

    def check(self) -> None:
        """:class:`LeaseLostError` when the lease is gone: lost to another replica, or past
        its local deadline without a renewal (a replica that was paused). No database trip:
        the session log calls it before every append."""
        if self.lost.is_set() or (not self.released and time.monotonic() > self.valid_until):
            raise LeaseLostError(
                f"this replica's lease on room {self.lease.session} (epoch {self.lease.epoch}) "
                "is gone: another replica may have taken the room; nothing was written"
            )

    def __str__(self) -> str:
        return f"{self.lease.session} (epoch {self.lease.epoch})"
