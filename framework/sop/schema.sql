-- SOP store schema (applied by framework/sop/schema.py). Applied on every open: every statement is
-- idempotent; columns added after a table's first release are also added by schema.py to
-- files made before them (CREATE TABLE IF NOT EXISTS leaves an old table as it was).
-- Versions are immutable: only versions.status is ever UPDATEd, and versions.steps once, to
-- add the products a card declares to a version stored before steps could declare them;
-- a trial's end (ended_at, verdict, reason) is written once; everything else is INSERTed
-- once and never changed. Timestamps are ISO 8601 UTC text, so
-- they sort as text.
-- Its PostgreSQL twin is pg_schema.sql (same tables and columns, prefixed staffroom_sop_): a
-- column added here is added there too, as a new step in framework/sop/pg_connection.py.

-- WAL: readers never block the writer, so several processes can share the file.
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;  -- durable enough under WAL
PRAGMA foreign_keys = ON;

CREATE TABLE IF NOT EXISTS sops (
    id    TEXT PRIMARY KEY,
    goal  TEXT NOT NULL,   -- of the latest version (kept for listing without a join)
    scope TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS versions (
    sop_id     TEXT    NOT NULL REFERENCES sops(id),
    version    INTEGER NOT NULL CHECK (version >= 1),
    goal       TEXT    NOT NULL,
    scope      TEXT    NOT NULL,
    steps      TEXT    NOT NULL,  -- JSON list of steps
    status     TEXT    NOT NULL CHECK (status IN ('draft', 'published', 'deprecated')),
    body       TEXT    NOT NULL DEFAULT '',
    created_at TEXT    NOT NULL,
    UNIQUE (sop_id, version)
);
CREATE INDEX IF NOT EXISTS versions_scope ON versions (scope);

CREATE TABLE IF NOT EXISTS change_log (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,  -- keeps entries in the order written
    sop_id        TEXT    NOT NULL,
    version       INTEGER NOT NULL,  -- the version row this entry belongs to
    entry_version INTEGER NOT NULL,  -- the version the entry talks about (may be earlier)
    why           TEXT    NOT NULL,
    by            TEXT,
    source        TEXT,
    FOREIGN KEY (sop_id, version) REFERENCES versions (sop_id, version)
);
CREATE INDEX IF NOT EXISTS change_log_version ON change_log (sop_id, version);

CREATE TABLE IF NOT EXISTS approvals (
    sop_id   TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    reviewer TEXT    NOT NULL,
    at       TEXT    NOT NULL,
    note     TEXT,
    UNIQUE (sop_id, version, reviewer),  -- approving twice changes nothing
    FOREIGN KEY (sop_id, version) REFERENCES versions (sop_id, version)
);

-- Who must approve a proposed version before it is published: recorded when it is proposed
-- (the scenario's sop_reviewers). A table, not a column of versions: older code sharing the
-- file inserts version rows by position.
CREATE TABLE IF NOT EXISTS reviewers (
    sop_id   TEXT    NOT NULL,
    version  INTEGER NOT NULL,
    reviewer TEXT    NOT NULL,
    UNIQUE (sop_id, version, reviewer),
    FOREIGN KEY (sop_id, version) REFERENCES versions (sop_id, version)
);

-- A version published over another published one runs as a trial beside the best for a
-- share of rooms, until judged (framework/sop/trials.py). One open trial per SOP.
CREATE TABLE IF NOT EXISTS trials (
    sop_id     TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    started_at TEXT    NOT NULL,
    ended_at   TEXT,              -- NULL while the trial runs
    verdict    TEXT,              -- promoted | rolled back | ended
    reason     TEXT,
    UNIQUE (sop_id, version),
    FOREIGN KEY (sop_id, version) REFERENCES versions (sop_id, version)
);

-- "references" is an SQL keyword, hence the quotes wherever the table is named.
CREATE TABLE IF NOT EXISTS "references" (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    sop_ref TEXT NOT NULL,
    session TEXT NOT NULL,
    user    TEXT NOT NULL DEFAULT '',
    at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS references_ref ON "references" (sop_ref);

CREATE TABLE IF NOT EXISTS outcomes (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    sop_ref             TEXT    NOT NULL,
    session             TEXT    NOT NULL,
    user                TEXT    NOT NULL DEFAULT '',
    success             INTEGER NOT NULL CHECK (success IN (0, 1)),
    score               REAL,
    duration_s          REAL    NOT NULL DEFAULT 0,
    off_sop_turns       INTEGER NOT NULL DEFAULT 0,
    human_interventions INTEGER NOT NULL DEFAULT 0,
    at                  TEXT    NOT NULL,
    corrections         TEXT    NOT NULL DEFAULT '[]',  -- JSON list of corrections
    failures            TEXT    NOT NULL DEFAULT '[]',  -- JSON list of reasons (added later)
    UNIQUE (sop_ref, session, at)  -- a replayed write of the same outcome is skipped
);
CREATE INDEX IF NOT EXISTS outcomes_ref ON outcomes (sop_ref);

CREATE TABLE IF NOT EXISTS replacements (
    old_ref TEXT NOT NULL,
    new_ref TEXT NOT NULL,
    at      TEXT NOT NULL,
    UNIQUE (old_ref, new_ref)  -- "times replaced" counts distinct successors
);
