"""Checkpoints copied from SQLite into PostgreSQL: a thread resumes there where it stood."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from framework.database.copy_checkpoints import copy_checkpoints, count_checkpoints
from framework.database.pool import Database


class State(TypedDict):
    said: Annotated[list[str], operator.add]


def graph(saver: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("speak", lambda s: {"said": [f"turn {len(s['said'])}"]})
    builder.add_node("ask", lambda s: {"said": [str(interrupt("your turn"))]})
    builder.add_edge(START, "speak")
    builder.add_edge("speak", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


async def test_a_waiting_thread_resumes_on_the_database_after_the_copy(
    tmp_path: Path, pg_url: str
) -> None:
    from langgraph.types import Command

    async with aiosqlite.connect(tmp_path / "checkpoints.sqlite") as conn:
        source = AsyncSqliteSaver(conn)
        await source.setup()
        for room in ("room:a", "room:b"):
            await graph(source).ainvoke({"said": []}, {"configurable": {"thread_id": room}})
        db = await Database.open(pg_url)
        try:
            target = AsyncPostgresSaver(conn=db.pool)
            await target.setup()
            copied = await copy_checkpoints(source, target)
            again = await copy_checkpoints(source, target)  # an interrupted copy is re-run
            assert copied == again == await count_checkpoints(target)
            assert set(copied.newest) == {"room:a", "room:b"}

            config: Any = {"configurable": {"thread_id": "room:a"}}
            state = await graph(target).aget_state(config)
            assert state.next == ("ask",), "still waiting for the person, as before the copy"
            done = await graph(target).ainvoke(Command(resume="hello"), config)
            assert done["said"] == ["turn 0", "hello"]
        finally:
            await db.close()
