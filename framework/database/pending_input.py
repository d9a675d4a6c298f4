"""Whether a room's latest checkpoint holds a run's input that no step has taken up.

LangGraph saves a ``Command`` input (a message to an entered room, an answer to a pause) as
pending writes of no task on the checkpoint the run starts from, before its first step. A run
killed there leaves them behind, and the state snapshot shows no ``next`` task. Put the next
input on top and LangGraph refuses two ``inbox`` values in one step, or one answer to a pause
silently replaces the other; ``Room._drive`` runs on with no input first, which applies them.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import StateSnapshot

__all__ = ["input_left"]

_SQLITE_TASK_IDS = (
    "SELECT DISTINCT task_id FROM writes "
    "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id = ?"
)


async def input_left(saver: Any, snap: StateSnapshot) -> bool:
    """Whether the checkpoint of ``snap`` (a thread's latest state) has pending writes of a
    task not among the snapshot's tasks: a run's input saved as writes of no task, and no
    step run since. ``saver``: the graph's checkpointer."""
    if not snap.values or not isinstance(saver, BaseCheckpointSaver):
        return False  # no checkpoint yet
    config, task_ids = snap.config, {task.id for task in snap.tasks}
    conf = config["configurable"]
    if isinstance(saver, AsyncSqliteSaver):
        # Only the writes' task ids: no checkpoint to load and decode (a post pays for it).
        await saver.setup()
        params = (str(conf["thread_id"]), str(conf["checkpoint_id"]))
        async with saver.lock, saver.conn.execute(_SQLITE_TASK_IDS, params) as cur:
            found = {str(row[0]) for row in await cur.fetchall()}
        return bool(found - task_ids)
    # On PostgreSQL the run's own read of the checkpoint, kept under its lease (no round trip).
    tuple_ = await saver.aget_tuple({"configurable": {"thread_id": conf["thread_id"]}})
    if tuple_ is None or tuple_.config["configurable"]["checkpoint_id"] != conf["checkpoint_id"]:
        return False
    return any(task_id not in task_ids for task_id, _, _ in tuple_.pending_writes or [])
