"""``id@version``: how an SOP version is named everywhere (logs, outcomes, the CLI).

One type parses it, so every surface refuses the same malformed text with the same words:
``tech-article@x`` is never read as ``tech-article`` (v1), and ``@3`` never as an SOP.
"""

from __future__ import annotations

from dataclasses import dataclass

from framework.errors import InputError
from framework.specs.limits import MAX_VERSION

__all__ = ["SopRef"]


@dataclass(frozen=True, slots=True)
class SopRef:
    """An SOP id and, optionally, one of its versions. ``str()`` gives ``id@version``
    (``id`` alone when no version is named)."""

    sop_id: str
    version: int | None = None
    """None: no version named (a command that reads then uses the best or newest)."""

    @staticmethod
    def id_of(text: str) -> str:
        """The id part of ``text`` (all of it when there is no ``@``), without checking the
        version: what to look up before saying what is wrong with the version."""
        return text.partition("@")[0]

    @classmethod
    def parse(cls, text: str, *, field: str = "sop", require_version: bool = False) -> SopRef:
        """``"tech-article@3"`` -> ``SopRef("tech-article", 3)``; ``"tech-article"`` ->
        ``SopRef("tech-article")`` unless ``require_version``.

        :class:`~framework.errors.InputError` naming ``field`` and the fix when the id is
        empty, the version is missing but required, or is not a whole number in range.
        """
        sop_id, at, number = text.partition("@")
        example = f"{sop_id or 'tech-article'}@1"
        if not sop_id:
            why = f"'{text}' names no SOP"
        elif not at and not require_version:
            return cls(sop_id)
        elif not number:
            why = f"'{text}' names no version"
        elif not (number.isascii() and number.isdigit()):
            why = f"'{number}' in '{text}' is not a version number"
        elif not 1 <= int(number) <= MAX_VERSION:
            why = f"version {int(number)} in '{text}' is out of range (1 to {MAX_VERSION:,})"
        else:
            return cls(sop_id, int(number))
        raise InputError(why, field=field, fix=f"write ID@VERSION, e.g. {example}")

    def __str__(self) -> str:
        return self.sop_id if self.version is None else f"{self.sop_id}@{self.version}"
