"""The fire ledger's records and interface: :class:`Fire`, :class:`Heartbeat`,
:class:`FireStore` (what both backends do), and the checks they share.

What the ledger is for, and how to open one: :mod:`framework.schedules.fire_store`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args

__all__ = [
    "BEATS_KEPT",
    "TERMINAL",
    "Fire",
    "FireState",
    "FireStore",
    "Heartbeat",
    "MissedState",
    "check_terminal",
    "lease_end",
    "utc",
]

FireState = Literal["running", "done", "quiet", "failed", "missed", "skipped"]
"""``running`` while claimed; then what became of it: ``done`` (ran and delivered),
``quiet`` (ran, had nothing to say), ``failed`` (after its retries), ``missed`` (its time
passed unrun, reported), ``skipped`` (not run on purpose: paused, or the previous one still
running)."""

MissedState = Literal["missed", "skipped"]

TERMINAL: frozenset[str] = frozenset(get_args(FireState)) - {"running"}
"""The states :meth:`FireStore.record` may set."""

BEATS_KEPT = timedelta(days=7)
"""How long the heartbeat of a scheduler that stopped beating is kept (then forgotten, so
restarts do not pile up rows)."""


@dataclass(frozen=True, slots=True)
class Fire:
    """One fire of one schedule, as the ledger holds it."""

    fire_id: str
    schedule: str
    due: datetime
    """When it was due (UTC); for a run-now, when it was asked for."""
    kind: str
    """``due`` | ``catchup`` | ``run_now`` | ``builtin``."""
    state: FireState
    owner: str | None
    """The scheduler that claimed it last (None for a fire recorded missed or skipped)."""
    attempts: int
    """How many claims it has had: 1, plus one per takeover of a dead owner's claim."""
    claimed_until: datetime | None
    """While ``running``: when the owner's claim runs out unless renewed; else None."""
    started: datetime | None
    """When the current claim began (None: never run)."""
    finished: datetime | None
    detail: str
    """The error text, why it was missed or skipped, or a short summary."""
    session: str | None
    """The session it ran in, once known."""


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A scheduler's last sign of life."""

    owner: str
    host: str
    pid: int
    since: datetime
    """Its first beat."""
    last: datetime
    """Its latest beat: a scheduler whose ``last`` is old has stalled or stopped."""


class FireStore(ABC):
    """The fire ledger of one data folder (or one database). Every method is atomic on its
    own, across processes and replicas; times are UTC-aware datetimes."""

    @property
    @abstractmethod
    def where(self) -> str:
        """Where the ledger is (the file, or the database without its password), for
        messages."""

    @abstractmethod
    async def claim(
        self,
        fire_id: str,
        schedule: str,
        due: datetime,
        kind: str,
        owner: str,
        *,
        now: datetime,
        lease_s: float,
    ) -> Fire | None:
        """Claim the fire before running it. A new id: inserted ``running``, owned by
        ``owner``, 1 attempt, claimed until ``now + lease_s``. An id whose row is ``running``
        with its claim run out (``claimed_until < now``): taken over (``owner``, one more
        attempt, a new lease; schedule, due and kind stay the row's). Either way the row is
        returned; otherwise (a live claim, or a fire already finished, missed or skipped)
        None. Of any number of concurrent callers, exactly one gets the row."""

    @abstractmethod
    async def record(
        self,
        fire_id: str,
        owner: str,
        state: FireState,
        *,
        now: datetime,
        detail: str = "",
        session: str | None = None,
    ) -> bool:
        """Finish a fire ``owner`` holds: ``state`` (not ``running``), finished at ``now``,
        ``detail`` and ``session`` (None keeps the session recorded so far). False, changing
        nothing, when ``owner`` no longer holds it (another scheduler took it over, or it is
        finished already): a stale owner never overwrites the outcome."""

    @abstractmethod
    async def record_missed(
        self,
        fire_id: str,
        schedule: str,
        due: datetime,
        state: MissedState,
        *,
        now: datetime,
        detail: str,
        kind: str = "due",
    ) -> bool:
        """Record a fire that will not run (``missed``: its time passed; ``skipped``: on
        purpose), unless the id has a row already. True when this call inserted it."""

    @abstractmethod
    async def set_session(self, fire_id: str, owner: str, session: str) -> bool:
        """Note the session a running fire of ``owner``'s runs in (before it ends, so a
        takeover after a crash finds it). False when ``owner`` no longer holds it."""

    @abstractmethod
    async def renew(
        self, fire_ids: Sequence[str], owner: str, *, now: datetime, lease_s: float
    ) -> list[str]:
        """Extend to ``now + lease_s`` the claims ``owner`` still holds among ``fire_ids``
        (running ones); the ids renewed: one missing was lost (taken over, or finished)."""

    @abstractmethod
    async def running(self, schedule: str | None = None) -> list[Fire]:
        """The schedule's fires (None: every schedule's) in state ``running`` (any owner, live
        claim or not), oldest due first."""

    @abstractmethod
    async def get(self, fire_id: str) -> Fire | None:
        """The fire ``fire_id``, or None."""

    @abstractmethod
    async def history(self, schedule: str | None = None, limit: int = 50) -> list[Fire]:
        """The latest ``limit`` fires (of ``schedule``, or of every schedule), newest due
        first. Schedules deleted from ``schedules.yaml`` keep theirs."""

    @abstractmethod
    async def cursor(self, schedule: str) -> datetime | None:
        """The last due time the schedule's fires were dealt with up to (None: never seen)."""

    @abstractmethod
    async def advance(self, schedule: str, to: datetime) -> None:
        """Move the schedule's cursor to ``to`` unless it is already later (never back:
        a scheduler with a slow or old view cannot make another fire again)."""

    @abstractmethod
    async def set_paused(self, schedule: str, paused: bool, *, by: str, now: datetime) -> None:
        """Pause the schedule (since ``now``, by ``by``; pausing a paused one keeps its first
        time) or resume it."""

    @abstractmethod
    async def paused(self) -> dict[str, datetime]:
        """The paused schedules, each with when it was paused."""

    @abstractmethod
    async def beat(self, owner: str, *, now: datetime, host: str, pid: int) -> None:
        """Record that the scheduler ``owner`` (on ``host``, process ``pid``) is alive at
        ``now``; beats older than :data:`BEATS_KEPT` are forgotten."""

    @abstractmethod
    async def heartbeats(self) -> list[Heartbeat]:
        """Every scheduler's last beat, latest first."""

    @abstractmethod
    async def close(self) -> None:
        """Release what the store holds (the SQLite connection; a database's pool stays its
        owner's)."""


def utc(moment: datetime, *, field: str = "now") -> datetime:
    """``moment`` in UTC; a naive datetime is refused (a local time read as UTC would move
    a fire by hours)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{field} must be timezone-aware (UTC), got naive {moment!r}")
    return moment.astimezone(UTC)


def lease_end(now: datetime, lease_s: float) -> datetime:
    """When a claim taken at ``now`` for ``lease_s`` seconds runs out."""
    if lease_s <= 0:
        raise ValueError(f"lease_s must be positive, got {lease_s}")
    return utc(now) + timedelta(seconds=lease_s)


def check_terminal(state: str) -> None:
    """Refuse a state :meth:`FireStore.record` may not set."""
    if state not in TERMINAL:
        raise ValueError(f"a fire is recorded {', '.join(sorted(TERMINAL))}, not {state!r}")
