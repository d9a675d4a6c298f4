"""The database setting: a ``postgresql://`` URL, checked at the edge and never shown whole."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from framework.errors import InputError

SCHEMES = ("postgresql", "postgres")


def check_database_url(text: str, *, where: str) -> str:
    """``text`` trimmed, when it is a PostgreSQL URL; else an :class:`InputError` naming
    ``where`` (``--database``, ``$STAFFROOM_DATABASE_URL``, ``server.yaml: database``)."""
    url = text.strip()
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not (parts.hostname or "host=" in parts.query):
        raise InputError(
            f"{redact(url)[:120]!r} is not a PostgreSQL URL",
            field=where,
            fix="give postgresql://USER:PASSWORD@HOST:PORT/DATABASE (SQLite, the default, "
            "needs no setting: leave it unset)",
        )
    return url


def redact(url: str, *, user: bool = True) -> str:
    """``url`` with its password replaced by ``***``: what logs, errors and status show.
    ``user`` False drops the user too (what a data folder records: where, not who)."""
    parts = urlsplit(url)
    if parts.password is None and (user or parts.username is None):
        return url
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    who = (parts.username or "") + (":***" if parts.password is not None else "")
    netloc = f"{who}@{host}{port}" if user and who else f"{host}{port}"
    return urlunsplit(parts._replace(netloc=netloc))
