"""Push each employee message to the URLs that asked for its session, signed, with retries.

A chat bot that cannot hold an SSE stream open registers a webhook per session pattern. Every
employee message a gateway post produces is POSTed as JSON::

    {"session": "room:support-7", "timestamp": "1767225600", "event": {...Event JSON...}}

with ``X-Staffroom-Timestamp`` (the same Unix seconds) and ``X-Staffroom-Signature:
sha256=<hex HMAC-SHA256 of the raw body with the target's secret>``; the receiver recomputes it
over the bytes it got, and the timestamp inside the signed body lets it refuse old replays.

Each target has its own bounded queue and worker, fed by :meth:`Gateway.add_listener`, so the
room never waits and a slow or dead receiver never delays another. A delivery is tried
``attempts`` times with exponential backoff (``base_delay`` x 2^n); one that still fails, or
that finds its queue full, is logged and appended to a JSONL file of failed deliveries
(``failures``) for an operator to replay.

Those queues are in memory: a crash loses what they hold. Given an :class:`Outbox` (with a
database, ``webhook_outbox.PgWebhookOutbox``), each delivery is recorded before it is queued,
only by the first replica to see it, marked when done, and a dead replica's pending ones are
taken over when a dispatcher starts and every ``SWEEP_SECONDS`` after.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Protocol

import httpx

from framework.sessions.events import Event, EventKind, utc_now

log = logging.getLogger("staffroom.webhooks")

SIGNATURE_HEADER = "X-Staffroom-Signature"
TIMESTAMP_HEADER = "X-Staffroom-Timestamp"

SWEEP_SECONDS = 60.0
"""How often a dispatcher with an outbox looks for deliveries a dead replica left."""


@dataclass(frozen=True, slots=True)
class WebhookTarget:
    """Where one session pattern's employee messages go."""

    sessions: str
    """Glob over session keys, e.g. ``room:support-*``."""
    url: str
    secret: str = field(repr=False)
    attempts: int = 5
    """Tries in all (the first and the retries)."""
    base_delay: float = 1.0
    """Seconds before the first retry; doubled before each next one."""
    timeout: float = 10.0
    """Seconds one try may take."""

    def wants(self, session: str) -> bool:
        """Whether ``session`` matches this target's pattern."""
        return fnmatchcase(session, self.sessions)


@dataclass(frozen=True, slots=True)
class Delivery:
    """The outcome of delivering one event to one target."""

    url: str
    session: str
    event_id: str
    ok: bool
    attempts: int
    status: int | None
    error: str | None


class Outbox(Protocol):
    """Where deliveries are recorded before they are made (see the module docstring)."""

    async def record(self, url: str, session: str, event: Event) -> bool:
        """Record the delivery; True when this process is the first to (it delivers)."""
        ...

    async def finish(self, delivery: Delivery) -> None:
        """Mark a recorded delivery done (delivered or failed)."""
        ...

    async def orphans(self, urls: Sequence[str]) -> list[tuple[str, str, Event]]:
        """Take over recorded deliveries to ``urls`` whose process died, to make them."""
        ...


def sign(secret: str, body: bytes) -> str:
    """The ``X-Staffroom-Signature`` value for ``body``: ``sha256=<hex HMAC>``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` is ``body``'s (what a receiver runs; constant-time compare)."""
    return hmac.compare_digest(sign(secret, body).encode(), signature.encode())


def is_employee_message(event: Event) -> bool:
    """An employee's chat message (not a person's, not a tool call or a plan)."""
    return event.kind == EventKind.MESSAGE and not event.from_person


class WebhookDispatcher:
    """Delivers employee messages to :class:`WebhookTarget` s in the background."""

    def __init__(
        self,
        targets: tuple[WebhookTarget, ...] | list[WebhookTarget],
        *,
        failures: Path,
        queue_size: int = 1000,
        client: httpx.AsyncClient | None = None,
        outbox: Outbox | None = None,
    ) -> None:
        self.targets = tuple(targets)
        self.outbox = outbox
        """Where deliveries are recorded (None: in memory only, lost at a crash)."""
        self.sweep_every = SWEEP_SECONDS
        """Seconds between two looks for a dead replica's deliveries (with an outbox)."""
        self.failures = failures
        self.delivered: list[Delivery] = []
        """Every finished delivery this process made (newest last), for status and tests."""
        self._client = client
        self._owns_client = client is None
        self._queues = [asyncio.Queue[tuple[str, Event]](queue_size) for _ in self.targets]
        self._workers: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        """Start one worker per target (call once, inside the running loop)."""
        if self._client is None:
            self._client = httpx.AsyncClient()
        for target, queue in zip(self.targets, self._queues, strict=True):
            self._workers.append(asyncio.create_task(self._work(target, queue)))
        if self.outbox is not None:
            await self._adopt_orphans()
            self._workers.append(asyncio.create_task(self._sweep()))

    async def _adopt_orphans(self) -> None:
        """Queue the recorded deliveries of replicas that died (the outbox's orphans)."""
        assert self.outbox is not None
        try:
            orphans = await self.outbox.orphans(sorted({t.url for t in self.targets}))
        except Exception:  # the database's trouble must not stop the server or the sweep
            log.exception("cannot take over the webhook deliveries of stopped replicas")
            return
        for url, session, event in orphans:
            index = next(i for i, t in enumerate(self.targets) if t.url == url)
            await self._enqueue(self.targets[index], self._queues[index], session, event)

    async def _sweep(self) -> None:
        # A replica that dies while this one runs leaves orphans no restart may come for.
        while True:
            await asyncio.sleep(self.sweep_every)
            await self._adopt_orphans()

    async def listener(self, session: str, event: Event) -> None:
        """For ``Gateway.add_listener``: queue ``event`` for every target that wants it.

        Never waits for a receiver (only for the outbox's insert, when there is one): a full
        queue drops the delivery and records it as failed.
        """
        if not is_employee_message(event):
            return
        for target, queue in zip(self.targets, self._queues, strict=True):
            if target.wants(session) and await self._record(target, session, event):
                await self._enqueue(target, queue, session, event)

    async def _record(self, target: WebhookTarget, session: str, event: Event) -> bool:
        """Whether this process delivers ``event`` to ``target`` (the outbox's first)."""
        if self.outbox is None:
            return True
        try:
            return await self.outbox.record(target.url, session, event)
        except Exception:  # better twice than never: deliver it without the outbox
            log.exception("cannot record the webhook delivery of %s to %s", event.id, target.url)
            return True

    async def _enqueue(
        self,
        target: WebhookTarget,
        queue: asyncio.Queue[tuple[str, Event]],
        session: str,
        event: Event,
    ) -> None:
        try:
            queue.put_nowait((session, event))
        except asyncio.QueueFull:
            await self._settle(
                target, Delivery(target.url, session, event.id, False, 0, None, "queue full")
            )

    async def close(self, *, timeout: float = 30.0) -> None:
        """Deliver what is queued (up to ``timeout`` seconds), then stop the workers."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(*(queue.join() for queue in self._queues)), timeout
            )
        for worker in self._workers:
            worker.cancel()
        for worker in self._workers:
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        self._workers.clear()
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _work(self, target: WebhookTarget, queue: asyncio.Queue[tuple[str, Event]]) -> None:
        while True:
            session, event = await queue.get()
            try:
                await self._settle(target, await self.deliver(target, session, event))
            except Exception:  # a bug here must not kill the worker for every later message
                log.exception("webhook delivery to %s crashed", target.url)
            finally:
                queue.task_done()

    async def deliver(self, target: WebhookTarget, session: str, event: Event) -> Delivery:
        """POST ``event`` to ``target`` until it answers 2xx or the attempts are spent."""
        assert self._client is not None, "call start() first"
        stamp = str(int(time.time()))
        payload = {"session": session, "timestamp": stamp, "event": json.loads(event.to_json())}
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(target.secret, body),
            TIMESTAMP_HEADER: stamp,
        }
        status: int | None = None
        error: str | None = None
        for attempt in range(1, target.attempts + 1):
            try:
                response = await self._client.post(
                    target.url, content=body, headers=headers, timeout=target.timeout
                )
                status, error = response.status_code, None
                if response.is_success:
                    return Delivery(target.url, session, event.id, True, attempt, status, None)
                error = f"HTTP {status}"
                if 400 <= status < 500 and status not in (408, 429):
                    break  # the receiver refuses this request itself: retrying cannot help
            except httpx.HTTPError as exc:
                status, error = None, f"{type(exc).__name__}: {exc}"
            if attempt < target.attempts:
                log.info("webhook %s try %d failed (%s); retrying", target.url, attempt, error)
                await asyncio.sleep(target.base_delay * 2 ** (attempt - 1))
        return Delivery(target.url, session, event.id, False, attempt, status, error)

    async def _settle(self, target: WebhookTarget, delivery: Delivery) -> None:
        self._finish(target, delivery)
        if self.outbox is None:
            return
        try:
            await self.outbox.finish(delivery)
        except Exception:  # the delivery is made; a stale row is at worst sent once more
            log.exception("cannot mark the webhook delivery of %s done", delivery.event_id)

    def _finish(self, target: WebhookTarget, delivery: Delivery) -> None:
        self.delivered.append(delivery)
        del self.delivered[:-1000]  # a long-running server keeps only the recent ones
        if delivery.ok:
            log.info("webhook %s got %s (try %d)", target.url, delivery.event_id, delivery.attempts)
            return
        log.warning(
            "webhook %s failed for %s after %d tries: %s",
            target.url,
            delivery.event_id,
            delivery.attempts,
            delivery.error,
        )
        record: dict[str, Any] = {
            "at": utc_now(),
            "url": delivery.url,
            "session": delivery.session,
            "event": delivery.event_id,
            "attempts": delivery.attempts,
            "status": delivery.status,
            "error": delivery.error,
        }
        try:
            self.failures.parent.mkdir(parents=True, exist_ok=True)
            with self.failures.open("a", encoding="utf-8") as out:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        except OSError as exc:
            log.error("cannot record the failed delivery in %s: %s", self.failures, exc)


__all__ = [
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "Delivery",
    "Outbox",
    "WebhookDispatcher",
    "WebhookTarget",
    "is_employee_message",
    "sign",
    "verify",
]
