"""What a data folder holds, and the record that lets a lost store be told from a new one.

SQLite creates a missing database file without a word, so a deleted ``sops.sqlite`` (every
SOP version, metric and draft) or ``checkpoints.sqlite`` (where every room stands) would come
back empty and look like a fresh start. ``stores.json`` records each store once it exists;
a store it lists that is missing or empty is a loss, reported before anything runs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from framework.errors import StorageError

MANIFEST = "stores.json"
CHECKPOINTS = "checkpoints.sqlite"
SOPS = "sops.sqlite"

HOLDS = {
    CHECKPOINTS: "where every room stands (its step, whose turn, what it waits for)",
    SOPS: "every SOP version, its metrics, outcomes and drafts",
}
"""Each store and what is lost with it: the error says which."""


@dataclass(frozen=True, slots=True)
class DataFolder:
    """A data folder's layout (``STAFFROOM_HOME``, ``.staffroom`` by default)."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    def store(self, name: str) -> Path:
        return self.root / name

    def recorded(self) -> dict[str, str]:
        """Stores this folder has had: name -> when it was first seen (ISO 8601 UTC)."""
        try:
            data = json.loads(self.manifest.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise StorageError(
                f"{self.manifest} is unreadable ({exc}); it only records which stores this "
                "folder has had: delete it, then run `staffroom doctor` to check the folder"
            ) from exc
        stores = data.get("stores") if isinstance(data, dict) else None
        return {str(k): str(v) for k, v in stores.items()} if isinstance(stores, dict) else {}

    def lost_stores(self, *names: str) -> list[str]:
        """One sentence per store this folder had (of ``names``: all) now missing or empty."""
        problems = []
        for name in self.recorded():
            if names and name not in names:
                continue
            path = self.store(name)
            if not path.exists():
                problems.append(f"{path} is missing: it held {HOLDS.get(name, 'data')}")
            elif path.is_file() and path.stat().st_size == 0:
                problems.append(f"{path} is empty: it held {HOLDS.get(name, 'data')}")
        return problems

    def check_stores(self, *names: str) -> None:
        """Raise if a store this folder had is gone (SQLite would recreate it empty)."""
        problems = self.lost_stores(*names)
        if problems:
            raise StorageError(
                "; ".join(problems) + ". Nothing was opened. Restore it from a backup, or "
                "accept the loss and start it empty: staffroom doctor --repair"
            )

    def record(self, *names: str) -> None:
        """Note stores that now exist (kept from then on: their loss is an error)."""
        known = self.recorded()
        new = {n: _now() for n in names if n not in known and self.store(n).exists()}
        if not new:
            return
        body = json.dumps({"format": 1, "stores": {**known, **new}}, indent=2) + "\n"
        tmp = self.manifest.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
        try:
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.manifest)  # atomic: a reader never sees half a file
        except OSError:
            # A read-only folder: nothing can be lost from it through us either.
            tmp.unlink(missing_ok=True)

    def forget(self, name: str) -> None:
        """Drop a store from the record (``doctor --repair`` starting it anew)."""
        known = self.recorded()
        if known.pop(name, None) is None:
            return
        body = json.dumps({"format": 1, "stores": known}, indent=2) + "\n"
        tmp = self.manifest.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
        tmp.write_text(body, encoding="utf-8")
        os.replace(tmp, self.manifest)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
