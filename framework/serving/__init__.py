"""Serving rooms to long-running surfaces: the gateway (exactly-once ingestion, double
texting, a durable queue, listeners), the ingest ledger, per-session lanes and webhooks."""

from framework.serving.gateway import Gateway
from framework.serving.results import PostResult, SessionState

__all__ = ["Gateway", "PostResult", "SessionState"]
