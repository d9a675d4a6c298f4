"""What the schedules tests share: a simulated clock, and the repo's project copied."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta
from pathlib import Path

from paths import ROOT


class SimClock:
    """A scheduler's clock that moves only when told (``at``) or slept on."""

    def __init__(self, now: datetime) -> None:
        self.at = now

    def now(self) -> datetime:
        return self.at

    async def sleep(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def copy_project(target: Path) -> Path:
    """The repo's agents, scenarios and SOP cards copied to ``target`` (a project of its own,
    where a test writes its schedules.yaml)."""
    for folder in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / folder, target / folder)
    return target
