"""Lenient typed reads of a JSON object from a log: a missing key, or a value of the wrong
JSON type, reads as missing, so logs of earlier versions and hand-edited lines never raise
(what :func:`framework.sessions.payloads.payload_of` builds on)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EMPTY: Mapping[str, Any] = {}


class Lenient:
    """Lenient typed reads of one JSON object (a key of the wrong type reads as missing)."""

    def __init__(self, content: object) -> None:
        self.c: Mapping[str, Any] = content if isinstance(content, dict) else EMPTY

    def str_(self, key: str) -> str | None:
        value = self.c.get(key)
        return value if isinstance(value, str) else None

    def int_(self, key: str) -> int | None:
        value = self.c.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def num(self, key: str) -> float | None:
        value = self.c.get(key)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    def bool_(self, key: str) -> bool:
        return bool(self.c.get(key))

    def flag(self, key: str) -> bool | None:
        value = self.c.get(key)
        return value if isinstance(value, bool) else None

    def list_(self, key: str) -> list[Any]:
        value = self.c.get(key)
        return list(value) if isinstance(value, list) else []

    def strs(self, key: str) -> list[str]:
        return [str(v) for v in self.list_(key)]

    def dict_(self, key: str) -> Mapping[str, Any]:
        value = self.c.get(key)
        return value if isinstance(value, dict) else EMPTY
