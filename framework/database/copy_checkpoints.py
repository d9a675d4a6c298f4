"""Copy LangGraph checkpoints from one saver to another, and check that nothing was lost.

``staffroom migrate --to`` uses it to move a data folder's ``checkpoints.sqlite`` into the
database. Every checkpoint is written with its own id and parent, in the order they were
made, with its pending writes, so a room resumes on the database exactly where it stood; a
second run writes the same rows again (the savers upsert by id), so an interrupted copy is
simply run again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

__all__ = ["CheckpointCount", "copy_checkpoints", "count_checkpoints"]


@dataclass(frozen=True, slots=True)
class CheckpointCount:
    """What a saver holds: checkpoints, pending writes, and each thread's newest checkpoint."""

    checkpoints: int
    writes: int
    newest: dict[str, str]
    """Thread id (and namespace, after a ``|`` when it has one) -> newest checkpoint id."""


def _thread(config: Any) -> str:
    configurable = config["configurable"]
    ns = configurable.get("checkpoint_ns") or ""
    return f"{configurable['thread_id']}|{ns}" if ns else str(configurable["thread_id"])


async def _all(saver: BaseCheckpointSaver[Any]) -> list[CheckpointTuple]:
    """Every checkpoint of every thread, oldest first (checkpoint ids sort by time)."""
    found = [item async for item in saver.alist(None)]
    return sorted(found, key=lambda t: str(t.config["configurable"]["checkpoint_id"]))


async def count_checkpoints(saver: BaseCheckpointSaver[Any]) -> CheckpointCount:
    """Count what ``saver`` holds (for the check after a copy)."""
    items = await _all(saver)
    newest: dict[str, str] = {}
    for item in items:
        newest[_thread(item.config)] = str(item.config["configurable"]["checkpoint_id"])
    writes = sum(len(item.pending_writes or []) for item in items)
    return CheckpointCount(len(items), writes, newest)


async def copy_checkpoints(
    source: BaseCheckpointSaver[Any], target: BaseCheckpointSaver[Any]
) -> CheckpointCount:
    """Write every checkpoint of ``source`` (and its pending writes) into ``target``; what
    was copied."""
    items = await _all(source)
    for item in items:
        configurable = item.config["configurable"]
        parent = (item.parent_config or {}).get("configurable", {}).get("checkpoint_id")
        config: Any = {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": configurable.get("checkpoint_ns", ""),
                **({"checkpoint_id": parent} if parent else {}),
            }
        }
        # Every channel's current version counts as new: the target stores each value once.
        versions = dict(item.checkpoint["channel_versions"])
        written = await target.aput(config, item.checkpoint, item.metadata, versions)
        by_task: dict[tuple[str, str], list[tuple[str, Any]]] = defaultdict(list)
        for task_id, channel, value in item.pending_writes or []:
            by_task[(task_id, "")].append((channel, value))
        for (task_id, path), writes in by_task.items():
            await target.aput_writes(written, writes, task_id, path)
    return await count_checkpoints(source)
