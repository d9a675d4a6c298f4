"""A pooled connection is checked before it is lent: one whose server session ended (a
restart, an administrator, an idle reaper) is replaced, never handed out broken, even when
it was back in the pool only a moment (``framework/database/pool_check.py``)."""

from __future__ import annotations

import asyncio
import time

import psycopg

from framework.database.pool import Database


async def test_a_connection_whose_session_the_server_ended_is_replaced_before_its_next_loan(
    pg_url: str,
) -> None:
    db = await Database.open(pg_url, max_size=1)
    try:
        async with db.connection() as conn:
            row = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
        assert row is not None
        pid = row["pid"]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            deadline = time.monotonic() + 10
            while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                assert time.monotonic() < deadline, "the session did not end"
                await asyncio.sleep(0.01)
        # The only connection of the pool is dead, and it came back a moment ago.
        async with db.connection() as conn:
            again = await (await conn.execute("SELECT pg_backend_pid() AS pid")).fetchone()
        assert again is not None and again["pid"] != pid
    finally:
        await db.close()
