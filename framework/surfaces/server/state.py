"""What every request handler reaches through ``request.app.state.staffroom``: the gateway,
the server's configuration and the in-memory rate limiter."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from fastapi import Request

from framework.serving.gateway import Gateway
from framework.surfaces.server.config import ServerConfig
from framework.surfaces.server.guard import Load
from framework.surfaces.server.public import PathScrubber


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


@dataclass
class ServerState:
    """The server's one shared object (``app.state.staffroom``)."""

    gateway: Gateway
    config: ServerConfig
    limiter: RateLimiter = field(default_factory=RateLimiter)
    load: Load = field(default_factory=Load)
    """Requests and streams under way (the Guard's counts)."""
    scrub: PathScrubber = field(init=False)
    """Takes the server's paths out of what it answers."""

    def __post_init__(self) -> None:
        settings = self.gateway.staff.settings
        self.scrub = PathScrubber(settings.project_dir, settings.data_dir)


def get_state(request: Request) -> ServerState:
    """The :class:`ServerState` of the app serving ``request`` (a FastAPI dependency)."""
    state = request.app.state.staffroom
    assert isinstance(state, ServerState)
    return state


__all__ = ["RateLimiter", "ServerState", "get_state"]
