"""A bounded set of ids (the messages a bridge sent, the events it replied with)."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["RecentIds"]


class RecentIds:
    """A bounded set of ids, oldest forgotten first."""

    def __init__(self, size: int = 4096) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def add(self, value: str) -> None:
        """Remember ``value``."""
        self._ids[value] = None
        self._ids.move_to_end(value)
        while len(self._ids) > self._size:
            self._ids.popitem(last=False)

    def __contains__(self, value: object) -> bool:
        return value in self._ids
