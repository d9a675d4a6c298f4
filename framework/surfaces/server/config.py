"""``server.yaml``: who may call the server (bearer tokens and their scope) and where room
messages are pushed (webhooks).

The file is read like every other spec file (:mod:`framework.specs.yaml_loader`), so a mistake
is reported as ``file:line field: message`` with a fix before the server binds its port.
Secrets are written in the file or, better, named by environment variable (``secret_env``);
either way they are resolved once here and never logged.

::

    heartbeat: 15                       # seconds between SSE pings
    tokens:
      - name: support-bot
        secret_env: SUPPORT_BOT_TOKEN
        sessions: ["room:support-*", "dm:*@support"]
        users: ["*"]
        operations: [read, open, post]
        rate_limit: 120                 # requests per minute; 0: no limit
    webhooks:
      - sessions: "room:support-*"
        url: https://bots.example.com/staffroom
        secret_env: SUPPORT_HOOK_SECRET
    database:                           # several replicas: docs/deployment.md
      url_env: STAFFROOM_DATABASE_URL   # or url: postgresql://... (url_env keeps the password out)
      pool_size: 10                     # connections this replica may hold
      lease_seconds: 15                 # a dead replica's rooms are taken over after this

``--database`` and ``$STAFFROOM_DATABASE_URL`` win over the file's ``database``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from framework.database.url import check_database_url
from framework.errors import InputError
from framework.serving.webhooks import WebhookTarget
from framework.settings import Settings
from framework.specs.yaml_loader import (
    SpecModel,
    load_yaml_file,
    spec_error,
    validate,
)
from framework.surfaces.server.limits import BodyLimits, ServerLimits

Operation = Literal["read", "open", "post", "sop.read", "sop.write", "knowledge.read", "schedule"]
OPERATIONS: tuple[Operation, ...] = (
    "read",
    "open",
    "post",
    "sop.read",
    "sop.write",
    "knowledge.read",
    "schedule",
)
"""The scope vocabulary: what a token may be granted. ``schedule``: run a schedule now, pause
and resume it (seeing schedules is ``read``); a token's ``sessions`` patterns do not limit it."""

ENV_TOKEN = "STAFFROOM_TOKEN"
"""Environment variable holding one all-powerful token (no file needed)."""
MIN_SECRET_CHARS = 16


class ServerConfigError(InputError):
    """``server.yaml`` (or ``$STAFFROOM_TOKEN``) is malformed."""


class _Secret(BaseModel):
    """A secret written inline or named by environment variable; exactly one of the two."""

    model_config = ConfigDict(extra="forbid")

    secret: str | None = Field(None, min_length=MIN_SECRET_CHARS, examples=["a-long-random-str"])
    secret_env: str | None = Field(None, min_length=1, max_length=200, examples=["BOT_TOKEN"])

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.secret is None) == (self.secret_env is None):
            raise spec_error(
                "give exactly one of 'secret' and 'secret_env'",
                "name an environment variable with `secret_env: MY_TOKEN` (keeps the secret "
                "out of the file), or write `secret:` with at least 16 characters",
            )
        return self


class _TokenDoc(_Secret):
    name: str = Field(min_length=1, max_length=64, examples=["support-bot"])
    sessions: list[str] = Field(default=["*"], examples=[["room:support-*"]])
    users: list[str] = Field(default=["*"], examples=[["alice", "ou_*"]])
    operations: list[Operation] = Field(min_length=1, examples=[["read", "post"]])
    rate_limit: int = Field(default=120, ge=0, le=1_000_000, examples=[120])


class _WebhookDoc(_Secret):
    sessions: str = Field(examples=["room:support-*"])
    url: str = Field(
        pattern=r"^https?://", max_length=2000, examples=["https://bots.example.com/hook"]
    )
    attempts: int = Field(default=5, ge=1, le=20, examples=[5])
    base_delay: float = Field(default=1.0, ge=0, le=600, examples=[1.0])
    timeout: float = Field(default=10.0, gt=0, le=600, examples=[10.0])


_LIMITS = ServerLimits()
_BODY = BodyLimits()


class _DatabaseDoc(BaseModel):
    """``database:``: the PostgreSQL the replicas share (see framework/settings.py)."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, max_length=2000, examples=["postgresql://staffroom@db/staffroom"])
    url_env: str | None = Field(
        None, min_length=1, max_length=200, examples=["STAFFROOM_DATABASE_URL"]
    )
    pool_size: int = Field(default=10, ge=1, le=500, examples=[10])
    lease_seconds: float = Field(default=15.0, gt=0, le=3600, examples=[15])

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.url is None) == (self.url_env is None):
            raise spec_error(
                "give exactly one of 'url' and 'url_env'",
                "name an environment variable holding the URL with `url_env: "
                "STAFFROOM_DATABASE_URL` (keeps the password out of the file), or write `url:`",
            )
        return self


@dataclass(frozen=True, slots=True)
class DatabaseConfig:
    """The file's ``database:`` resolved: the URL (never logged whole) and the budgets."""

    url: str = field(repr=False)
    pool_size: int = 10
    lease_seconds: float = 15.0


class _BodyDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")

    messages: int = Field(default=_BODY.messages, ge=1024, le=1 << 30)
    sop_edits: int = Field(default=_BODY.sop_edits, ge=1024, le=1 << 30)
    adapters: int = Field(default=_BODY.adapters, ge=1024, le=1 << 30)
    other: int = Field(default=_BODY.other, ge=1024, le=1 << 30)


class _LimitsDoc(BaseModel):
    """``limits:``: see framework/surfaces/server/limits.py for what each one bounds."""

    model_config = ConfigDict(extra="forbid")

    body: _BodyDoc = Field(default_factory=_BodyDoc, description="bytes, by kind of route")
    max_connections: int = Field(default=_LIMITS.max_connections, ge=1, le=1_000_000)
    max_requests: int = Field(default=_LIMITS.max_requests, ge=1, le=1_000_000)
    max_requests_per_token: int = Field(default=_LIMITS.max_requests_per_token, ge=1)
    max_streams: int = Field(default=_LIMITS.max_streams, ge=0, le=1_000_000)
    max_streams_per_token: int = Field(default=_LIMITS.max_streams_per_token, ge=0)
    max_header_bytes: int = Field(default=_LIMITS.max_header_bytes, ge=1024, le=1 << 20)
    header_timeout: float = Field(default=_LIMITS.header_timeout, gt=0, le=3600)
    body_timeout: float = Field(default=_LIMITS.body_timeout, gt=0, le=3600)
    keep_alive: int = Field(default=_LIMITS.keep_alive, ge=1, le=3600)

    def build(self) -> ServerLimits:
        fields = self.model_dump(exclude={"body"})
        return ServerLimits(body=BodyLimits(**self.body.model_dump()), **fields)


class _ServerDoc(SpecModel):
    heartbeat: float = Field(default=15.0, gt=0, le=3600, examples=[15])
    wait_limit: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="seconds a post with wait: true is held before it answers 202 (queued)",
        examples=[30],
    )
    tokens: list[_TokenDoc] = Field(default_factory=list)
    webhooks: list[_WebhookDoc] = Field(default_factory=list)
    limits: _LimitsDoc = Field(default_factory=_LimitsDoc)
    database: _DatabaseDoc | None = None
    # Read and checked by the adapters (framework/surfaces/adapters/http.py), only when present.
    adapters: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class TokenGrant:
    """One bearer token and what it may do. ``secret`` never leaves this process."""

    name: str
    secret: str = field(repr=False)
    sessions: tuple[str, ...] = ("*",)
    """Glob patterns over session keys (``room:support-*``); ``*`` is every session."""
    users: tuple[str, ...] = ("*",)
    """Glob patterns over the people it may post as or open DMs for."""
    operations: frozenset[str] = frozenset(OPERATIONS)
    rate_limit: int = 0
    """Requests per minute (a token bucket of that size); 0: unlimited."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """What the server runs with: tokens, webhooks, heartbeat. Build with :func:`load_config`."""

    tokens: tuple[TokenGrant, ...] = ()
    webhooks: tuple[WebhookTarget, ...] = ()
    heartbeat: float = 15.0
    """Seconds between SSE ``ping`` comments on an idle stream."""
    wait_limit: float = 30.0
    """Seconds a ``wait: true`` post is held; then 202 (queued) and the run goes on."""
    no_auth: bool = False
    """Every request is allowed without a token (only ever on 127.0.0.1)."""
    source: Path | None = None
    adapters: bool = False
    """The file has an ``adapters:`` section (chat platforms; ``load_adapters`` reads it)."""
    limits: ServerLimits = field(default_factory=ServerLimits)
    """Body sizes, concurrent requests and streams, timeouts (``limits:``)."""
    database: DatabaseConfig | None = None
    """The file's ``database:`` (``--database`` / ``$STAFFROOM_DATABASE_URL`` win over it)."""
    schedules: bool = True
    """Run the project's schedules (``schedules.yaml``) and built-in jobs (closing idle
    sessions, reflections) in this server; ``staffroom serve --no-schedules`` turns it off."""


def load_config(
    path: str | Path | None,
    *,
    environ: Mapping[str, str] | None = None,
    no_auth: bool = False,
) -> ServerConfig:
    """Read ``path`` (None: no file) and ``$STAFFROOM_TOKEN``; errors name file:line and fix."""
    env = os.environ if environ is None else environ
    tokens: list[TokenGrant] = []
    webhooks: list[WebhookTarget] = []
    heartbeat, has_adapters, wait_limit = 15.0, False, 30.0
    limits = ServerLimits()
    database: DatabaseConfig | None = None
    source = Path(path) if path is not None else None
    if source is not None:
        data, lines = load_yaml_file(source, error_cls=ServerConfigError)
        doc = (
            _ServerDoc().with_source(source, lines)
            if data is None
            else validate(_ServerDoc, data, file=source, lines=lines, error_cls=ServerConfigError)
        )
        heartbeat, has_adapters = doc.heartbeat, bool(doc.adapters)
        wait_limit = doc.wait_limit
        limits = doc.limits.build()
        database = _database(doc, env)
        for i, token in enumerate(doc.tokens):
            where = ("tokens", i)
            tokens.append(
                TokenGrant(
                    name=token.name,
                    secret=_resolve(token, doc, where, env),
                    sessions=tuple(token.sessions),
                    users=tuple(token.users),
                    operations=frozenset(token.operations),
                    rate_limit=token.rate_limit,
                )
            )
        for i, hook in enumerate(doc.webhooks):
            webhooks.append(
                WebhookTarget(
                    sessions=hook.sessions,
                    url=hook.url,
                    secret=_resolve(hook, doc, ("webhooks", i), env),
                    attempts=hook.attempts,
                    base_delay=hook.base_delay,
                    timeout=hook.timeout,
                )
            )
        _check_unique(tokens, doc)
    env_secret = env.get(ENV_TOKEN, "")
    if env_secret:
        if len(env_secret) < MIN_SECRET_CHARS:
            raise ServerConfigError(
                f"${ENV_TOKEN} has {len(env_secret)} characters; a token needs at least "
                f"{MIN_SECRET_CHARS}",
                field=ENV_TOKEN,
                fix="set it to a long random value, e.g. `export STAFFROOM_TOKEN=$(openssl "
                "rand -hex 24)`",
            )
        tokens.append(TokenGrant(name="env", secret=env_secret))
    return ServerConfig(
        tuple(tokens),
        tuple(webhooks),
        heartbeat,
        no_auth=no_auth,
        source=source,
        adapters=has_adapters,
        wait_limit=wait_limit,
        limits=limits,
        database=database,
    )


def with_file_database(settings: Settings, config: ServerConfig) -> Settings:
    """``settings`` with the file's ``database:``: its URL unless ``--database`` or
    ``$STAFFROOM_DATABASE_URL`` gave one (they win), its pool size and lease length."""
    if config.database is None:
        return settings
    return settings.model_copy(
        update={
            "database": settings.database or config.database.url,
            "database_pool_size": config.database.pool_size,
            "lease_seconds": config.database.lease_seconds,
        }
    )


def _database(doc: _ServerDoc, env: Mapping[str, str]) -> DatabaseConfig | None:
    """The ``database:`` section, its URL read from the environment when named there."""
    section = doc.database
    if section is None:
        return None
    key = "url" if section.url is not None else "url_env"
    raw = section.url if section.url is not None else env.get(section.url_env or "", "")
    line, field_name = doc.line_of("database", key), f"database.{key}"
    if not raw.strip():
        raise ServerConfigError(
            f"environment variable {section.url_env} is not set",
            file=doc.source,
            line=line,
            field=field_name,
            fix=f"export {section.url_env}=postgresql://USER:PASSWORD@HOST/DATABASE before "
            "starting the server, or remove database: to keep SQLite",
        )
    try:
        url = check_database_url(raw, where=field_name)
    except InputError as exc:
        raise ServerConfigError(
            exc.message, file=doc.source, line=line, field=field_name, fix=exc.fix
        ) from None
    return DatabaseConfig(url, section.pool_size, section.lease_seconds)


def _resolve(
    doc: _Secret, root: _ServerDoc, where: tuple[str | int, ...], env: Mapping[str, str]
) -> str:
    if doc.secret is not None:
        return doc.secret
    name = doc.secret_env or ""
    value = env.get(name, "")
    if len(value) < MIN_SECRET_CHARS:
        said = "is not set" if not value else f"holds only {len(value)} characters"
        raise ServerConfigError(
            f"environment variable {name} {said}",
            file=root.source,
            line=root.line_of(*where, "secret_env"),
            field=f"{where[0]}[{where[1]}].secret_env",
            fix=f"export {name} with a secret of at least {MIN_SECRET_CHARS} characters before "
            "starting the server",
        )
    return value


def _check_unique(tokens: list[TokenGrant], doc: _ServerDoc) -> None:
    names: set[str] = set()
    secrets: set[str] = set()
    for i, token in enumerate(tokens):
        problem = (
            f"token name '{token.name}' is used twice"
            if token.name in names
            else "two tokens have the same secret"
            if token.secret in secrets
            else None
        )
        if problem is not None:
            raise ServerConfigError(
                problem,
                file=doc.source,
                line=doc.line_of("tokens", i),
                field=f"tokens[{i}]",
                fix="give every token its own name and its own secret",
            )
        names.add(token.name)
        secrets.add(token.secret)


__all__ = [
    "ENV_TOKEN",
    "OPERATIONS",
    "DatabaseConfig",
    "Operation",
    "ServerConfig",
    "ServerConfigError",
    "TokenGrant",
    "load_config",
    "with_file_database",
]
