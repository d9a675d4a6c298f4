"""Bring a ``sops.sqlite`` up to the current schema (``schema.sql`` plus added columns)."""

from __future__ import annotations

from importlib import resources

import aiosqlite

_ADD_FAILURES = "ALTER TABLE outcomes ADD COLUMN failures TEXT NOT NULL DEFAULT '[]'"


async def prepare(conn: aiosqlite.Connection) -> None:
    """Apply ``schema.sql`` (idempotent) and add the columns an older file lacks."""
    schema = resources.files("framework.sop").joinpath("schema.sql").read_text("utf-8")
    await conn.executescript(schema)
    await _add_missing_columns(conn)


async def _add_missing_columns(conn: aiosqlite.Connection) -> None:
    # CREATE TABLE IF NOT EXISTS leaves a table made by an older schema as it was: add the
    # columns it lacks. Inside one IMMEDIATE transaction, so two processes opening the same
    # old file do not both add the column.
    await conn.execute("BEGIN IMMEDIATE")
    try:
        async with conn.execute("PRAGMA table_info(outcomes)") as cursor:
            have = {row[1] for row in await cursor.fetchall()}
        if "failures" not in have:
            await conn.execute(_ADD_FAILURES)
        await conn.execute("COMMIT")
    except BaseException:
        await conn.execute("ROLLBACK")
        raise
