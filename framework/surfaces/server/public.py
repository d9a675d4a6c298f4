"""What leaves the server: no path of the machine it runs on.

Errors and events are written for people at a terminal, so they name files where they are
(``/srv/team/scenarios/``, a memory file under the data folder, an old room's absolute
``scenario_source``). Over HTTP those paths tell a caller how the server is laid out. Every
answer and streamed event passes through :class:`PathScrubber`: a path inside the project
becomes relative to it, one inside the data folder ``<data>/…``, and a ``scenario_source``
outside both keeps only its file name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

DATA = "<data>"
"""What the data folder's path becomes in answers."""


class PathScrubber:
    """Rewrites the project's and the data folder's absolute paths in text and events."""

    def __init__(self, project_dir: Path, data_dir: Path) -> None:
        pairs: dict[str, str] = {}
        for root, shown in ((data_dir, DATA), (project_dir, ".")):
            for form in {str(root.absolute()), str(root.resolve())}:
                pairs.setdefault(form.rstrip(os.sep) or os.sep, shown)
        # Longest first: the data folder usually sits inside the project.
        self._roots = sorted(pairs.items(), key=lambda item: len(item[0]), reverse=True)

    def text(self, text: str) -> str:
        """``text`` with every known root replaced (``/srv/p/scenarios`` -> ``scenarios``)."""
        for root, shown in self._roots:
            if root not in text:
                continue
            text = text.replace(root + os.sep, "" if shown == "." else shown + "/")
            text = text.replace(root, shown)
        return text

    def value(self, value: Any) -> Any:
        """``value`` (JSON-like) with :meth:`text` applied to every string in it."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        return value

    def event(self, event: dict[str, Any]) -> dict[str, Any]:
        """An event as it may leave the server."""
        out: dict[str, Any] = self.value(event)
        content = out.get("content")
        if isinstance(content, dict):
            source = content.get("scenario_source")
            if isinstance(source, str) and PurePath(source).is_absolute():
                content["scenario_source"] = PurePath(source).name  # outside both roots
        return out


__all__ = ["DATA", "PathScrubber"]
