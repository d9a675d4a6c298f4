"""The SOP store's longer statements, in the SQL both its backends accept (see backend.py):
``?`` placeholders, ``INSERT ... ON CONFLICT``, ``"user"`` quoted (a keyword in PostgreSQL),
columns named rather than counted where a table differs between the two.
"""

from __future__ import annotations

from collections.abc import Iterable

from .backend import Row
from .model import VersionMetrics

__all__ = [
    "APPROVE",
    "END_OPEN_TRIALS",
    "LOG",
    "REFERENCE",
    "REFERENCES_OF",
    "REVIEWER",
    "SET_STATUS",
    "metrics_from",
    "outcome_insert",
    "runs_by_user",
]

APPROVE = "INSERT INTO approvals VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
LOG = (  # seq: the next number
    "INSERT INTO change_log (sop_id, version, entry_version, why, by, source) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
REVIEWER = (
    "INSERT INTO reviewers (sop_id, version, reviewer) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
)
END_OPEN_TRIALS = (
    "UPDATE trials SET ended_at = ?, verdict = ?, reason = ? WHERE sop_id = ? AND ended_at IS NULL"
)
SET_STATUS = "UPDATE versions SET status = ? WHERE sop_id = ? AND version = ?"
REFERENCE = 'INSERT INTO "references" (sop_ref, session, "user", at) VALUES (?, ?, ?, ?)'
REFERENCES_OF = (  # args: the ref twice
    "SELECT COUNT(*) AS n, MAX(at) AS last, (SELECT COUNT(*) FROM replacements WHERE "
    'old_ref = ?) AS replaced FROM "references" WHERE sop_ref = ?'
)


def outcome_insert(columns: Iterable[str], *, amend: bool) -> str:
    """Insert an outcome row of ``columns``: a repeat is skipped, or with ``amend`` replaces
    the stored one's values (its key: ref, session, ``at``)."""
    names = list(columns)
    quoted = ", ".join(f'"{k}"' for k in names)
    sql = f"INSERT INTO outcomes ({quoted}) VALUES ({', '.join('?' for _ in names)})"
    if not amend:
        return sql + " ON CONFLICT DO NOTHING"
    kept = ("sop_ref", "session", "at")
    changed = ", ".join(f'"{k}" = excluded."{k}"' for k in names if k not in kept)
    return sql + f" ON CONFLICT (sop_ref, session, at) DO UPDATE SET {changed}"


def runs_by_user(json_length: str) -> str:
    """One version's outcomes summed per user; ``json_length``: the backend's SQL for the
    number of corrections in the ``corrections`` column."""
    return (
        'SELECT "user", COUNT(*) AS runs, SUM(success) AS ok, '
        f"SUM({json_length}) AS corr, SUM(duration_s) AS dur, "
        f"SUM(CASE WHEN success = 1 AND {json_length} = 0 THEN 1 ELSE 0 END) AS hits, "
        'MAX(at) AS last FROM outcomes WHERE sop_ref = ? GROUP BY "user" ORDER BY "user"'
    )


def metrics_from(runs: list[Row], refs: Row) -> VersionMetrics:
    """:class:`VersionMetrics` from :func:`runs_by_user`'s rows and :data:`REFERENCES_OF`'s."""
    total = sum(r["runs"] for r in runs)
    return VersionMetrics(
        references=refs["n"],
        runs=total,
        successes=sum(r["ok"] for r in runs),
        corrections=sum(r["corr"] for r in runs),
        mean_duration_s=sum(r["dur"] for r in runs) / total if total else 0.0,
        replaced=refs["replaced"],
        hit_rate_by_user={r["user"]: r["hits"] / r["runs"] for r in runs},
        last_used=max([refs["last"] or "", *(r["last"] for r in runs)]),
    )
