"""What every request handler reaches through ``request.app.state.staffroom``: the gateway,
the server's configuration and the rate limiter (in memory, or with a database the buckets
every replica shares: :class:`~framework.surfaces.server.pg_buckets.PgRateBuckets`)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Protocol

from fastapi import Request

from framework.serving.gateway import Gateway
from framework.surfaces.server.config import ServerConfig
from framework.surfaces.server.guard import Load
from framework.surfaces.server.public import PathScrubber


class RateBuckets(Protocol):
    """Token buckets per token name, whatever holds them (this process, or a database)."""

    async def acquire(self, name: str, limit: int) -> float:
        """Take one request from ``name``'s bucket (``limit`` a minute, bursts up to
        ``limit``): 0 when allowed, else seconds to wait."""
        ...


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass
class RateLimiter:
    """Token buckets per token name: ``limit`` requests a minute, bursts up to ``limit``.

    In memory, per process: a restart forgives everyone, which is fine for abuse control.
    """

    _buckets: dict[str, _Bucket] = field(default_factory=dict)

    def take(self, name: str, limit: int) -> float:
        """Take one request from ``name``'s bucket: 0 when allowed, else seconds to wait."""
        if limit <= 0:
            return 0.0
        now = time.monotonic()
        bucket = self._buckets.setdefault(name, _Bucket(float(limit), now))
        rate = limit / 60.0
        bucket.tokens = min(float(limit), bucket.tokens + (now - bucket.stamp) * rate)
        bucket.stamp = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return max(1.0, math.ceil((1.0 - bucket.tokens) / rate))

    async def acquire(self, name: str, limit: int) -> float:
        """:meth:`take`, as :class:`RateBuckets` asks."""
        return self.take(name, limit)


@dataclass
class ServerState:
    """The server's one shared object (``app.state.staffroom``)."""

    gateway: Gateway
    config: ServerConfig
    limiter: RateLimiter = field(default_factory=RateLimiter)
    """This process's buckets (used when there are no :attr:`shared_buckets`)."""
    shared_buckets: RateBuckets | None = None
    """Buckets every replica shares (``PgRateBuckets`` on the database), or None."""
    load: Load = field(default_factory=Load)
    """Requests and streams under way (the Guard's counts)."""
    scrub: PathScrubber = field(init=False)
    """Takes the server's paths out of what it answers."""

    def __post_init__(self) -> None:
        settings = self.gateway.staff.settings
        self.scrub = PathScrubber(settings.project_dir, settings.data_dir)

    async def rate_wait(self, name: str, limit: int) -> float:
        """Take one request from token ``name``'s budget: 0 when allowed, else seconds to
        wait (the replicas' :attr:`shared_buckets` when there are some, else this process's)."""
        if self.shared_buckets is not None:
            return await self.shared_buckets.acquire(name, limit)
        return self.limiter.take(name, limit)


def get_state(request: Request) -> ServerState:
    """The :class:`ServerState` of the app serving ``request`` (a FastAPI dependency)."""
    state = request.app.state.staffroom
    assert isinstance(state, ServerState)
    return state


__all__ = ["RateBuckets", "RateLimiter", "ServerState", "get_state"]
