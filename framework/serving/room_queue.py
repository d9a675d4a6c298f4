"""A room's queue across replicas: the ingest ledger decides order and double texting.

Every message a gateway accepts is a row of the ingest ledger with a place in one order
(``seq``), whichever replica (or process) took it. The lanes run a room's messages by that
order and the scenario's policy is decided on the rows, so posts to different replicas meet
the policy one replica's posts meet:

- **order**: a message starts (``queued`` -> ``running``) only when no other message of its
  room runs and none older (by its first name's place) waits, anywhere; until then its lane
  waits (:meth:`RoomQueue.begin`);
- ``reject``: a message is recorded only when no other message of the room waits or runs
  (:meth:`~framework.serving.ledger.IngestLedger.admit`, ``unless_answering``);
- ``coalesce``: a message joins the room's newest waiting message when that one is the same
  person's, has not started, and had a part within the window (:meth:`RoomQueue.coalesce`);
  the message starts once the window after its latest part has passed, and takes the text
  and merged ids the ledger holds then, parts from other replicas included;
- ``interrupt``: the lane running a message asks the ledger, between turns, whether a newer
  one waits (:meth:`RoomQueue.newer`), wherever it was posted.

The decisions that read then write (is the room answering, which message to join, may this
one start while parts may still join it) run one room at a time in the backend's
:meth:`~framework.serving.ledger_backend.LedgerBackend.serial` block: a transaction under the
room's advisory lock on PostgreSQL. On the file (no database) each process keeps its own
order and policy (:meth:`~framework.serving.ledger_backend.LedgerBackend.mine`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .ledger import IngestLedger
from .ledger_backend import PENDING, Statements
from .results import PostResult

__all__ = ["RoomQueue", "Start"]

# Another message of the room runs, or one older than this message (its first row) waits.
_AHEAD = (
    "EXISTS (SELECT 1 FROM ingest AS o WHERE o.session = ? AND o.message_id <> ?{mine} "
    "AND (o.state = 'running' OR (o.state = 'queued' AND o.seq < "
    "(SELECT MIN(seq) FROM ingest WHERE session = ? AND message_id = ?))))"
)


@dataclass(frozen=True, slots=True)
class Start:
    """What :meth:`RoomQueue.begin` found for a message about to run."""

    go: Literal["run", "wait", "answered"]
    """``run``: it is now ``running``; ``wait``: another message of the room runs, or an
    older one waits (or parts may still join it); ``answered``: not this lane's to run any
    more: another replica answered it (``result``), or it joined a message that another
    replica runs (``merged_into``). A message the ledger forgot (its run failed elsewhere)
    runs: it was accepted here, and the log's ids keep it once."""
    text: str = ""
    """The text to run (with the parts joined to it so far)."""
    merged: list[str] = field(default_factory=list)
    """The ids joined to it (policy ``coalesce``), in arrival order."""
    result: dict[str, Any] | None = None
    """``answered``: the result the ledger holds, if any."""
    merged_into: str | None = None
    """``answered``: the message it joined, if it was joined to one."""

    def answer(self, session: str, message_id: str, policy: str) -> PostResult:
        """``answered``: what the message's waiters get (its result, once it has one)."""
        if self.result is not None:
            return PostResult.from_dict(self.result)
        status = "coalesced" if self.merged_into is not None else "queued"
        return PostResult(session, message_id, status, policy, merged_into=self.merged_into)


class RoomQueue:
    """Order and double texting of every room, on the ingest ledger's rows."""

    def __init__(self, ledger: IngestLedger) -> None:
        self._db = ledger.backend

    async def coalesce(
        self, session: str, message_id: str, author: str, text: str, window: float
    ) -> str | None:
        """Join the just-recorded ``message_id`` to the room's newest waiting message when
        that one is ``author``'s, has not started, is neither an opening nor a reply, and had
        a part within ``window`` seconds; the id it joined, or None (it stays on its own)."""
        self._db.admit("text", text)
        recent = (
            f"(t.created >= {self._db.ago} OR EXISTS (SELECT 1 FROM ingest AS m "
            f"WHERE m.session = t.session AND m.merged_into = t.message_id "
            f"AND m.created >= {self._db.ago}))"
        )
        mine, owner = self._db.mine("t.")
        latest, owner_latest = self._db.mine("")
        find = (
            "SELECT t.message_id FROM ingest AS t WHERE t.session = ? AND t.state = 'queued' "
            "AND t.author = ? AND t.opening = 0 AND t.reply_to IS NULL "
            f"AND t.message_id <> ?{mine} "
            f"AND t.seq = (SELECT MAX(seq) FROM ingest WHERE session = ? AND {PENDING} "
            f"AND message_id <> ?{latest}) AND {recent}"
        )
        args = (
            session,
            author,
            message_id,
            *owner,
            session,
            message_id,
            *owner_latest,
            window,
            window,
        )
        async with self._db.serial(session) as serial:
            found = await serial.rows(find, args)
            if not found:
                return None
            target = str(found[0]["message_id"])
            joined = await serial.execute(
                "UPDATE ingest SET text = text || ? WHERE session = ? AND message_id = ? "
                "AND state = 'queued'",
                ("\n" + text, session, target),
            )
            if not joined:  # it started meanwhile (a process without the room's lock)
                return None
            await serial.execute(
                "UPDATE ingest SET state = 'coalesced', merged_into = ? "
                "WHERE session = ? AND message_id = ?",
                (target, session, message_id),
            )
        return target

    async def begin(self, session: str, message_id: str, *, window: float | None = None) -> Start:
        """Mark ``message_id`` running when no other message of the room runs and none older
        waits; with ``window`` (policy ``coalesce``) also only once ``window`` seconds passed
        since a part last joined it, and with the parts joined so far."""
        if window is None:
            return await self._begin(self._db, session, message_id, None)
        async with self._db.serial(session) as serial:  # no part joins while it starts
            return await self._begin(serial, session, message_id, window)

    async def _begin(self, db: Statements, session: str, mid: str, window: float | None) -> Start:
        mine, owner = self._db.mine("o.")
        settled = ""
        args: tuple[Any, ...] = (session, mid, session, mid, *owner, session, mid)
        if window is not None:
            settled = (
                " AND NOT EXISTS (SELECT 1 FROM ingest AS m WHERE m.session = ? "
                f"AND m.merged_into = ? AND m.created > {self._db.ago})"
            )
            args += (session, mid, window)
        started = await db.rows(
            "UPDATE ingest SET state = 'running' WHERE session = ? AND message_id = ? "
            f"AND {PENDING} AND NOT {_AHEAD.format(mine=mine)}{settled} RETURNING text, seq",
            args,
        )
        if started:
            text = str(min(started, key=lambda r: int(r["seq"]))["text"])
            merged: list[str] = []
            if window is not None:
                parts = await db.rows(
                    "SELECT message_id FROM ingest WHERE session = ? AND merged_into = ? "
                    "ORDER BY seq",
                    (session, mid),
                )
                merged = list(dict.fromkeys(str(p["message_id"]) for p in parts))
            return Start("run", text, merged)
        rows = await db.rows(
            "SELECT state, result, merged_into FROM ingest WHERE session = ? AND message_id = ? "
            "ORDER BY seq",
            (session, mid),
        )
        if any(r["state"] in ("queued", "running") for r in rows):
            return Start("wait")
        if not rows:  # forgotten after a failed run elsewhere: it runs (see Start.go)
            return Start("run", "")
        stored = next((r["result"] for r in rows if r["result"] is not None), None)
        joined = next((r["merged_into"] for r in rows if r["merged_into"] is not None), None)
        found = None if stored is None else json.loads(stored)
        return Start("answered", result=found, merged_into=joined)

    async def counts(self, session: str) -> tuple[int, int]:
        """How many of the room's messages run and how many wait, on every replica."""
        mine, owner = self._db.mine("")
        rows = await self._db.rows(
            f"SELECT state, COUNT(DISTINCT message_id) AS n FROM ingest WHERE session = ? "
            f"AND {PENDING}{mine} GROUP BY state",
            (session, *owner),
        )
        found = {str(r["state"]): int(r["n"]) for r in rows}
        return found.get("running", 0), found.get("queued", 0)

    async def newer(self, session: str, message_id: str, seq: int) -> bool:
        """Whether a person's message newer than ``message_id`` (its place ``seq``) waits
        in the room, whichever replica took it (policy ``interrupt``)."""
        mine, owner = self._db.mine("")
        rows = await self._db.rows(
            f"SELECT 1 AS found FROM ingest WHERE session = ? AND {PENDING} AND opening = 0 "
            f"AND seq > ? AND message_id <> ?{mine} LIMIT 1",
            (session, seq, message_id, *owner),
        )
        return bool(rows)
