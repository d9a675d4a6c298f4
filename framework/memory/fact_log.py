"""``facts.json`` beside a MEMORY.md: where each entry came from, when it was last confirmed,
and the values corrections replaced. Never shown to a model.

::

    {"entries": {"偏好语言: English": {"source": "dm:alice@pm", "added": "2026-12-01",
                                        "confirmed": "2026-12-03"}},
     "superseded": [{"section": "preferences", "old": "偏好语言: 中文",
                      "new": "偏好语言: English", "date": "2026-12-01"}]}

MEMORY.md stays what the prompt shows, so people read and edit it as before; this file is
written under MEMORY.md's lock, right after it. It is advice, not a source of truth: an entry
it does not know (a hand edit) has no record yet, and records of entries that left MEMORY.md
are dropped on the next write. A file that does not parse is set aside as
``facts.json.broken`` and started again, never a reason to refuse a memory write.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from framework.atomic_files import replace_file

__all__ = ["MAX_SUPERSEDED", "FactLog", "Superseded"]

MAX_SUPERSEDED = 50
"""Replaced values kept (oldest dropped first), so the file stays small."""


@dataclass(frozen=True, slots=True)
class Superseded:
    """A value a correction replaced: kept, dated, outside the prompt."""

    section: str
    old: str
    new: str
    date: str


class FactLog:
    """The ``facts.json`` of one MEMORY.md; callers hold MEMORY.md's lock."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def load(
        self, *, set_aside: bool = False
    ) -> tuple[dict[str, dict[str, str]], list[Superseded]]:
        """Records by entry text, and the superseded values (oldest first). A file that does
        not parse reads as empty; with ``set_aside`` (a writer) it is moved to
        ``facts.json.broken`` first, so nothing in it is lost."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = {
                str(k): {str(a): str(b) for a, b in v.items()} for k, v in data["entries"].items()
            }
            gone = [Superseded(**item) for item in data.get("superseded", [])]
        except FileNotFoundError:
            return {}, []
        except (ValueError, KeyError, TypeError, AttributeError, OSError):
            if set_aside:
                self.path.replace(self.path.with_name(f"{self.path.name}.broken"))
            return {}, []
        return entries, gone

    def update(
        self,
        current: list[str],
        *,
        touched: dict[str, str],
        source: str,
        day: str,
        superseded: list[Superseded],
    ) -> None:
        """Record ``touched`` entries (text -> ``added``/``confirmed``) as from ``source`` on
        ``day``, append ``superseded``, and drop records of entries no longer in ``current``."""
        entries, gone = self.load(set_aside=True)
        for text, how in touched.items():
            record = entries.get(text, {"added": day})
            record["confirmed"] = day
            if source and (how == "added" or "source" not in record):
                record["source"] = source
            entries[text] = record
        kept = {text: entries[text] for text in current if text in entries}
        gone = [*gone, *superseded][-MAX_SUPERSEDED:]
        body = {"entries": kept, "superseded": [asdict(s) for s in gone]}
        self._write(json.dumps(body, ensure_ascii=False, indent=1) + "\n")

    def forget(self, matches: Callable[[str], bool]) -> int:
        """Drop the superseded values ``matches`` finds in (old or new text), so a forgotten
        fact does not live on here; returns how many went."""
        entries, gone = self.load(set_aside=True)
        kept = [s for s in gone if not (matches(s.old) or matches(s.new))]
        if len(kept) != len(gone):
            body = {"entries": entries, "superseded": [asdict(s) for s in kept]}
            self._write(json.dumps(body, ensure_ascii=False, indent=1) + "\n")
        return len(gone) - len(kept)

    def _write(self, text: str) -> None:
        # Callers hold MEMORY.md's lock: a temp file here is a killed writer's. Advice that
        # may be lost (see the module docstring): not synced, and as private as mkstemp makes it.
        data = text.encode("utf-8")
        prefix = f".{self.path.name}."
        replace_file(self.path, data, prefix=prefix, mode=None, sync=False, clear_stale=True)
