"""The FastAPI application behind ``staffroom serve``.

:func:`create_app` serves a :class:`Gateway` the caller opened (tests, an embedding bot);
:func:`build_app_from_project` opens the Staffroom and its gateway in the app's lifespan
(``uvicorn --factory`` style). Either way the lifespan starts the webhook dispatcher and, on
shutdown, lets queued messages run before webhooks are drained, so nothing accepted is lost.

Nothing in the data folder is served as a file: there is no static mount, and every session
key in a path is parsed (:class:`SessionKey`) before it is used.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager

from fastapi import APIRouter, FastAPI
from pydantic import BaseModel

from framework.data_folder import DataFolder
from framework.serving.gateway import Gateway
from framework.serving.webhooks import WebhookDispatcher
from framework.settings import Settings
from framework.staffroom import Staffroom
from framework.surfaces.server import routes_catalog, routes_sessions, streams
from framework.surfaces.server.config import ServerConfig
from framework.surfaces.server.guard import Guard
from framework.surfaces.server.problems import install_handlers
from framework.surfaces.server.state import ServerState

log = logging.getLogger("staffroom.server")

EXTRA_ROUTERS = (
    "framework.surfaces.server.routes_sop",
    "framework.surfaces.server.routes_viewer",
    "framework.surfaces.adapters.http",
)
"""Modules whose ``router`` is included too (each skipped only while it does not exist yet)."""

GatewayOpener = Callable[[], AbstractAsyncContextManager[Gateway]]


class Health(BaseModel):
    """The server is up."""

    status: str


def create_app(
    gateway: Gateway,
    config: ServerConfig,
    *,
    owns_gateway: bool = False,
    adapters: object | None = None,
) -> FastAPI:
    """The app serving ``gateway``; it closes the gateway at shutdown when ``owns_gateway``.
    ``adapters``: the chat platforms' config (``load_adapters``), started with the app."""

    @asynccontextmanager
    async def given() -> AsyncIterator[Gateway]:
        try:
            yield gateway
        finally:
            if owns_gateway:
                await gateway.close()

    app = _build(given, config)
    app.state.adapters = adapters
    # Usable before (or without) the lifespan, e.g. through httpx.ASGITransport.
    app.state.staffroom = ServerState(gateway, config)
    return app


def build_app_from_project(settings: Settings, config: ServerConfig) -> FastAPI:
    """An app that opens the Staffroom of ``settings`` and its gateway when it starts, and
    closes both when it stops."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[Gateway]:
        async with await Staffroom.open(settings=settings) as staff:
            gateway = await Gateway.open(staff)
            try:
                yield gateway
            finally:
                await gateway.close()

    return _build(opened, config)


def _build(open_gateway: GatewayOpener, config: ServerConfig) -> FastAPI:
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
            stack.push_async_callback(_stop_adapters, app)
            gateway = await stack.enter_async_context(open_gateway())
            app.state.staffroom = ServerState(gateway, config)
            if getattr(app.state, "adapters", None) is not None:
                from framework.surfaces.adapters.http import start_adapters

                start_adapters(app)  # replies to work resumed at open reach the platform too
            if config.webhooks:
                failures = DataFolder(gateway.staff.settings.data_dir).webhook_failures
                dispatcher = WebhookDispatcher(config.webhooks, failures=failures)
                await dispatcher.start()
                hooks.append(dispatcher)
                gateway.add_listener(dispatcher.listener)
            yield

    app = FastAPI(
        title="Staffroom",
        summary="Rooms and DMs of digital employees over HTTP",
        version="1",
        lifespan=lifespan,
    )
    install_handlers(app)
    app.add_middleware(Guard)  # token, limits and body caps before any route reads a body

    @app.get("/api/health", tags=["server"], summary="Liveness (no token needed)")
    async def health() -> Health:
        return Health(status="ok")

    for router in (routes_catalog.router, routes_sessions.router, streams.router):
        app.include_router(router)
    for router in extra_routers():
        app.include_router(router)
    return app


async def _stop_adapters(app: FastAPI) -> None:
    bridges = getattr(app.state, "adapter_bridges", None)
    if bridges is not None:
        await bridges.stop()


def extra_routers() -> list[APIRouter]:
    """The routers of :data:`EXTRA_ROUTERS` that exist."""
    found: list[APIRouter] = []
    for name in EXTRA_ROUTERS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is None:
                raise
            if not exc.name.startswith("framework"):
                # An optional extra is not installed (the adapters need `staffroom[adapters]`).
                log.info("%s needs %s, not installed; its routes are left out", name, exc.name)
                continue
            if not (name == exc.name or name.startswith(exc.name + ".")):
                raise  # the module exists but imports something missing: a real error
            log.debug("%s is not there yet; its routes are left out", name)
            continue
        found.append(module.router)
    return found


__all__ = ["EXTRA_ROUTERS", "build_app_from_project", "create_app", "extra_routers"]
