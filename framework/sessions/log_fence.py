"""Fencing a session log: lines a replica wrote after it lost its room lease are not history.

Several ``staffroom serve`` replicas may share one data folder (over NFS, where ``flock`` across
machines cannot be trusted) while PostgreSQL leases each room to one of them with a fencing
epoch that goes up at every takeover. A file append cannot be made conditional on that row,
so the log is fenced by what it holds instead:

* A writer under a lease sets ``JsonlLog.fence`` (a :class:`LogFence`). Each append first calls
  ``fence.check()`` (the lease compares a local deadline: no database round trip) and stamps
  every event with ``fence.epoch`` (``{"id":"…","epoch":3,…}``, see ``Event.to_dict``).
* A new holder calls ``JsonlLog.mark_epoch()`` right after taking the lease and before it
  reads the log: that writes a marker line, ``{"epoch":3,"mark":"lease","ts":"…"}``. The
  marker is not an event (no reader yields it, so ``tail(1)``, idle checks and renderers never
  see it), has no id (so it can never stand in for an event's id), and closes the gap between
  the takeover and the new holder's first event: whatever the old holder appends after it is
  stale, whatever it appended before is read by the new holder like any event of a run that
  crashed after its log write (the runtime's deterministic ids make the re-run skip it).
* Readers keep the highest epoch seen so far in file order; an event line whose epoch is
  lower was written by a replica that had lost its lease and is dropped, and recorded as a
  :class:`StaleLine` in ``JsonlLog.stale`` (for ``staffroom doctor``). The id index leaves
  such a line's id out, so the new holder's re-run of that step is written, not skipped.
* An append under the log's lock refuses (``LeaseLostError``) when the file already holds a
  higher epoch than the writer's, and an unfenced append (epoch 0) to a log that holds
  epochs is refused too (``StorageError``): every reader would drop its lines.

Epoch 0 is "unfenced": single-process SQLite mode and logs from before leases carry no
``epoch`` key at all, and read exactly as before.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol

from framework.sessions.events import Event, utc_now

__all__ = ["MARK", "EpochGate", "LogFence", "StaleLine", "mark_line", "marker_epoch", "parse_line"]

MARK = "lease"
"""The ``mark`` value of a takeover marker line."""


class LogFence(Protocol):
    """What a log needs of a room lease to fence its appends (the database layer's lease)."""

    @property
    def epoch(self) -> int:
        """The lease's fencing epoch (>= 1; it goes up at every takeover of the room)."""
        ...

    def check(self) -> None:
        """Raise :class:`~framework.errors.LeaseLostError` unless the lease is still held.

        Called before every append, so it must be cheap (a local monotonic deadline).
        """
        ...


class StaleLine(NamedTuple):
    """An event line a reader dropped: written under ``epoch`` after ``newer`` took over."""

    line: int | None
    """1-based line number (file-order readers), or None."""
    offset: int | None
    """Byte offset of the line (``tail``), or None."""
    id: str
    epoch: int
    newer: int
    """The highest epoch before it in the file."""


def mark_line(epoch: int) -> bytes:
    """The takeover marker of ``epoch``, one whole line."""
    data = {"epoch": epoch, "mark": MARK, "ts": utc_now()}
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()


def marker_epoch(data: dict[str, Any]) -> int | None:
    """The epoch of a parsed takeover marker line, or None when ``data`` is not one."""
    epoch = data.get("epoch")
    if "id" in data or data.get("mark") != MARK or type(epoch) is not int or epoch < 1:
        return None
    return epoch


def parse_line(raw: bytes) -> Event | int:
    """A log line as its event, or a marker's epoch; raises ``KeyError``, ``ValueError`` or
    ``TypeError`` when it is neither."""
    data: Any = json.loads(raw)
    if not isinstance(data, dict):
        raise TypeError(f"expected a JSON object, got {type(data).__name__}")
    epoch = marker_epoch(data)
    return epoch if epoch is not None else Event.from_dict(data)


class EpochGate:
    """The highest epoch seen so far in file order, and whether a line still passes it."""

    __slots__ = ("top",)

    def __init__(self, top: int = 0) -> None:
        self.top = top

    def passes(self, item: Event | int) -> bool:
        """Feed the next line (an event, or a marker's epoch); whether it is an event to keep.

        A marker raises the bar and is never kept; an event below the bar is stale.
        """
        if isinstance(item, int):
            self.top = max(self.top, item)
            return False
        if item.epoch < self.top:
            return False
        self.top = item.epoch
        return True
