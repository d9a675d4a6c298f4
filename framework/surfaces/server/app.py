"""The FastAPI application behind ``staffroom serve``.

:func:`create_app` serves a :class:`Gateway` the caller opened (tests, an embedding bot);
:func:`build_app_from_project` opens the Staffroom and its gateway in the app's lifespan
(``uvicorn --factory`` style). Either way the lifespan starts the webhook dispatcher and, on
shutdown, lets queued messages run before webhooks are drained, so nothing accepted is lost.

Nothing in the data folder is served as a file: there is no static mount, and every session
key in a path is parsed (:class:`SessionKey`) before it is used.

The chat platforms' webhooks (``/adapters/*``) are served when the caller passes them in
(``adapters=``, a :class:`Mount`, e.g. ``framework.surfaces.adapters.http.AdapterRoutes``,
which needs the ``adapters`` extra): the server imports nothing of them, and without them
their routes are absent, which the startup log and the API docs say.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Protocol

from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel

from framework.data_folder import DataFolder
from framework.phrases import Phrase
from framework.schedules.delivery import ChatDelivery
from framework.schedules.in_server import running_scheduler
from framework.serving.gateway import Gateway
from framework.serving.webhook_outbox import PgWebhookOutbox
from framework.serving.webhooks import WebhookDispatcher
from framework.settings import Settings
from framework.staffroom import Staffroom
from framework.surfaces.server import (
    routes_catalog,
    routes_schedules,
    routes_sessions,
    routes_sop,
    routes_viewer,
    streams,
)
from framework.surfaces.server.config import ServerConfig
from framework.surfaces.server.guard import Guard
from framework.surfaces.server.pg_buckets import PgRateBuckets
from framework.surfaces.server.problems import install_handlers
from framework.surfaces.server.state import ServerState

log = logging.getLogger("staffroom.server")

NO_ADAPTERS = Phrase(
    en="Chat-platform webhooks (/adapters/*) are not served: this server was built without "
    "them (`staffroom serve` mounts them when the adapters extra is installed: "
    "pip install 'staffroom[adapters]').",
    zh="未提供聊天平台的 webhook（/adapters/*）：此服务器构建时没有包含它们"
    "（安装 adapters 扩展后 `staffroom serve` 会挂载它们：pip install 'staffroom[adapters]'）。",
)
"""What the startup log and the API docs say when no adapters were passed in."""


class Mount(Protocol):
    """Routes served beside the API with a life of their own, built by the caller and passed
    to :func:`create_app`: the chat adapters. The app factory hands them what they need
    (:meth:`bind`) and starts and stops them with the app; it knows nothing else of them."""

    @property
    def router(self) -> APIRouter:
        """The routes to include."""
        ...

    def bind(self, gateway: Gateway, body_cap: int) -> None:
        """The gateway to serve, and the body cap of their requests (the server config's)."""
        ...

    def start(self) -> object:
        """Start (once) when the app starts, after :meth:`bind`; what it returns reaches the
        scheduler when it is a :class:`ChatDelivery` (the chat platforms' adapters are)."""
        ...

    async def stop(self) -> None:
        """Finish after the gateway has closed (its last replies still go out)."""
        ...


GatewayOpener = Callable[[], AbstractAsyncContextManager[Gateway]]


class Health(BaseModel):
    """The server is up (and how its scheduler is)."""

    status: str
    scheduler: str | None = None
    """``ok``; ``stalled`` (no tick for three tick periods); None: not run by this server."""


def create_app(
    gateway: Gateway,
    config: ServerConfig,
    *,
    owns_gateway: bool = False,
    adapters: Mount | None = None,
) -> FastAPI:
    """The app serving ``gateway``; it closes the gateway at shutdown when ``owns_gateway``.
    ``adapters``: the chat platforms' webhooks (``AdapterRoutes(load_adapters(path))``),
    started with the app; None: their routes are absent (and the log and docs say so)."""

    @asynccontextmanager
    async def given() -> AsyncIterator[Gateway]:
        try:
            yield gateway
        finally:
            if owns_gateway:
                await gateway.close()

    app = _build(given, config, adapters)
    # Usable before (or without) the lifespan, e.g. through httpx.ASGITransport.
    app.state.staffroom = ServerState(gateway, config)
    if adapters is not None:
        adapters.bind(gateway, config.limits.body.adapters)
    return app


def build_app_from_project(
    settings: Settings, config: ServerConfig, *, adapters: Mount | None = None
) -> FastAPI:
    """An app that opens the Staffroom of ``settings`` and its gateway when it starts, and
    closes both when it stops (``adapters`` as :func:`create_app` takes them)."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Gateway]:
        async with await Staffroom.open(settings=settings) as staff:
            gateway = await Gateway.open(staff)
            try:
                yield gateway
            finally:
                await gateway.close()

    return _build(opened, config, adapters)


def _build(open_gateway: GatewayOpener, config: ServerConfig, adapters: Mount | None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            hooks: list[WebhookDispatcher] = []

            async def close_hooks() -> None:
                for dispatcher in hooks:
                    await dispatcher.close()

            # Pushed first so they run last: the gateway's final runs still reach webhooks and
            # the chat platforms.
            stack.push_async_callback(close_hooks)
            if adapters is not None:
                stack.push_async_callback(adapters.stop)
            gateway = await stack.enter_async_context(open_gateway())
            # With a database: the rate buckets and webhook outbox every replica shares.
            db = await gateway.staff.stores.database()
            buckets = await PgRateBuckets.open(db) if db is not None else None
            app.state.staffroom = ServerState(gateway, config, shared_buckets=buckets)
            chat: ChatDelivery | None = None
            if adapters is not None:
                adapters.bind(gateway, config.limits.body.adapters)
                started = adapters.start()  # replies to work resumed at open reach them too
                chat = started if isinstance(started, ChatDelivery) else None
            else:
                log.info(NO_ADAPTERS(gateway.staff.settings.language or "en"))
            if config.webhooks:
                folder = DataFolder(gateway.staff.settings.data_dir)
                # One file per machine with a database: appends from several machines to one
                # file on a shared folder are not atomic.
                failures = (
                    folder.webhook_failures_of(socket.gethostname())
                    if db is not None
                    else folder.webhook_failures
                )
                outbox = await PgWebhookOutbox.open(db) if db is not None else None
                dispatcher = WebhookDispatcher(config.webhooks, failures=failures, outbox=outbox)
                await dispatcher.start()
                hooks.append(dispatcher)
                gateway.add_listener(dispatcher.listener)
            if config.schedules:
                running = running_scheduler(gateway, chat=chat)
                app.state.scheduler = await stack.enter_async_context(running)
            yield

    app = FastAPI(
        title="Staffroom",
        summary="Rooms and DMs of digital employees over HTTP",
        description="" if adapters is not None else NO_ADAPTERS("en"),  # the docs are English
        version="1",
        lifespan=lifespan,
    )
    install_handlers(app)
    app.add_middleware(Guard)  # token, limits and body caps before any route reads a body

    @app.get("/api/health", tags=["server"], summary="Liveness (no token needed)")
    async def health(request: Request) -> Health:
        scheduler = getattr(request.app.state, "scheduler", None)
        return Health(status="ok", scheduler=scheduler.health() if scheduler is not None else None)

    routers = [routes_catalog.router, routes_sessions.router, streams.router, routes_sop.router]
    routers += [routes_schedules.router]
    routers += [routes_viewer.router, *([adapters.router] if adapters is not None else [])]
    for router in routers:
        app.include_router(router)
    return app


__all__ = ["NO_ADAPTERS", "Mount", "build_app_from_project", "create_app"]
