"""``staffroom serve``: the HTTP server (rooms, DMs, streams, webhooks) under uvicorn.

Everything a person can get wrong is checked before the port is bound or a store opened: the
config file and the project's ``staffroom.yaml`` (``file:line field: message`` and a fix), a
server with no token (refused unless ``--no-auth`` on a loopback address), a port in use. Each
is one ``error:`` line and exit 2.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import signal
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from framework.errors import InputError, StaffroomError
from framework.surfaces.cli.options import DatabaseOption, DataDir, settings_for
from framework.surfaces.cli.workers import Supervisor, require_database

if TYPE_CHECKING:  # the server loads when `serve` runs: every other command stays light
    import uvicorn

    from framework.settings import Settings
    from framework.surfaces.server.app import Mount
    from framework.surfaces.server.config import ServerConfig

SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "httpx")
"""What ``serve`` imports from the ``server`` extra (checked by the CLI without importing)."""

LOOPBACK = ("127.0.0.1", "::1", "localhost")
LOG_LEVELS = ("debug", "info", "warning", "error")
err_console = Console(stderr=True, soft_wrap=True)
console = Console(soft_wrap=True)


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: any free one).")
    ] = 8765,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="server.yaml: tokens and their scope, webhooks."),
    ] = None,
    no_auth: Annotated[
        bool,
        typer.Option("--no-auth", help="Serve without tokens (only on 127.0.0.1 / ::1)."),
    ] = False,
    data_dir: DataDir = None,
    project: Annotated[
        Path | None,
        typer.Option("--project", "--project-dir", help="Folder with agents/, scenarios/."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model for every employee (as `run --model`)."),
    ] = None,
    log_level: Annotated[
        str, typer.Option("--log-level", help="debug, info, warning or error.")
    ] = "info",
    database: DatabaseOption = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Replica processes on this host sharing the port (more than 1 needs "
            "--database); a worker that dies is started again.",
        ),
    ] = 1,
    no_schedules: Annotated[
        bool,
        typer.Option(
            "--no-schedules",
            help="Do not run schedules.yaml and the built-in jobs here (another host runs "
            "`staffroom schedules run`).",
        ),
    ] = False,
    listen_fd: Annotated[int | None, typer.Option("--listen-fd", hidden=True)] = None,
) -> None:
    """Serve rooms and DMs over HTTP: JSON API, SSE streams, webhooks (docs at /docs)."""
    import asyncio

    from framework.specs.project_file import project_language
    from framework.stores import require_writable
    from framework.surfaces.server.config import load_config, with_file_database

    if log_level not in LOG_LEVELS:
        _fail(
            f"--log-level {log_level!r} is not a level\n  fix: use one of: {', '.join(LOG_LEVELS)}"
        )
    try:
        settings = settings_for(
            data_dir, project, model, uses_model=model is not None, database=database
        )
        require_writable(settings.data_dir, "serve")
        project_language(settings.project_dir, settings.language)  # the viewer's; checked now
        server_config = load_config(config, no_auth=no_auth)
        if no_schedules:
            server_config = replace(server_config, schedules=False)
        settings = with_file_database(settings, server_config)
        require_database(workers, settings.database)
        adapters = _adapters(server_config)
        check_auth(server_config, host)
        # A worker of `--workers N` serves the socket its parent bound.
        sock = bind(host, port) if listen_fd is None else socket.socket(fileno=listen_fd)
    except InputError as exc:
        _fail(exc.render())
    except StaffroomError as exc:
        _fail(str(exc))
    if listen_fd is None:
        bound = sock.getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"http://{shown}:{bound[1]}"
        said = f"staffroom serving on {url} (API docs at /docs)"
        said += f" with {workers} workers" if workers > 1 else ""
        console.print(said, markup=False, highlight=False)
    if workers > 1:
        args = [f"--host={host}", f"--log-level={log_level}", f"--data-dir={settings.data_dir}"]
        args += [f"--project={settings.project_dir}"]
        args += [f"--config={config}"] if config is not None else []
        args += ["--no-auth"] if no_auth else []
        args += ["--no-schedules"] if no_schedules else []
        args += [f"--model={model}"] if model is not None else []
        args += [f"--database={database}"] if database is not None else []
        try:
            raise typer.Exit(Supervisor(workers, sock, args).run())
        finally:
            sock.close()
    _logging(log_level)
    try:
        asyncio.run(_run(settings, server_config, sock, log_level, adapters))
    except StaffroomError as exc:
        _fail(exc.render() if isinstance(exc, InputError) else str(exc))
    finally:
        sock.close()


def check_auth(config: ServerConfig, host: str) -> None:
    """Refuse a server anyone could use: no tokens needs ``--no-auth`` and a loopback host."""
    from framework.surfaces.server.config import ENV_TOKEN

    if config.no_auth:
        if config.tokens:
            raise InputError(
                "--no-auth was given, but tokens are configured",
                field="--no-auth",
                fix="drop --no-auth to use the tokens, or drop the tokens",
            )
        if host not in LOOPBACK:
            raise InputError(
                f"--no-auth serves everyone without a token, so it binds only to 127.0.0.1 "
                f"or ::1, not {host}",
                field="--host",
                fix="use --host 127.0.0.1, or configure tokens (--config server.yaml or "
                f"${ENV_TOKEN}) to serve on {host}",
            )
        return
    if not config.tokens:
        raise InputError(
            "no tokens are configured, so nobody could call this server",
            field="--config",
            fix=f"give --config server.yaml with `tokens:`, or set ${ENV_TOKEN}; for a local "
            "try-out only, --no-auth (127.0.0.1 only)",
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; an :class:`InputError` when it is taken."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise InputError(
            f"cannot resolve host {host!r}: {exc.strerror}",
            field="--host",
            fix="use an address such as 127.0.0.1 or 0.0.0.0",
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"port {port} on {host} is already in use",
                field="--port",
                fix="stop what holds it, or pick another --port (0 picks a free one)",
            ) from None
        raise InputError(
            f"cannot listen on {host}:{port}: {exc.strerror}",
            field="--port",
            fix="ports below 1024 need privileges; use one above it",
        ) from None
    sock.set_inheritable(True)
    return sock


def _adapters(config: ServerConfig) -> Mount | None:
    """The chat platforms' webhooks, their ``adapters:`` section checked now (file:line
    errors); None when the ``adapters`` extra is not installed (the app then says their
    routes are absent), unless the config asks for them: then that is the error."""
    try:
        # The one import of the adapters: an optional extra, so only where it is mounted.
        from framework.surfaces.adapters.http import AdapterRoutes, load_adapters
    except ImportError as exc:
        if exc.name is not None and exc.name.startswith("framework"):
            raise  # our own module missing is a broken install, not a missing extra
        if config.adapters and config.source is not None:
            raise InputError(
                f"{config.source}: the adapters section needs the adapters extra ({exc})",
                field="adapters",
                fix="pip install 'staffroom[adapters]', or remove the section",
            ) from None
        return None
    if not config.adapters or config.source is None:
        return AdapterRoutes()  # no platform configured: each answers 404 and says how
    return AdapterRoutes(load_adapters(config.source))


async def _run(
    settings: Settings,
    config: ServerConfig,
    sock: socket.socket,
    level: str,
    adapters: Mount | None = None,
) -> None:
    import uvicorn

    from framework.serving.gateway import Gateway
    from framework.staffroom import Staffroom
    from framework.surfaces.server.app import create_app
    from framework.surfaces.server.protocol import protocol_for

    async with await Staffroom.open(settings=settings) as staff:
        gateway = await Gateway.open(staff)
        app = create_app(gateway, config, owns_gateway=True, adapters=adapters)
        limits = config.limits
        server = _server(
            uvicorn.Config(
                app,
                lifespan="on",
                log_level=level,
                timeout_graceful_shutdown=10,
                # Set here, not left to uvicorn's defaults: the server guide's security section
                # promises these (framework/surfaces/server/protocol.py answers in JSON).
                http=protocol_for(limits),
                h11_max_incomplete_event_size=limits.max_header_bytes,
                timeout_keep_alive=limits.keep_alive,
            )
        )
        await server.serve(sockets=[sock])


def _server(config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server whose Ctrl-C / SIGTERM only ask it to stop.

    uvicorn raises the captured signal again once it has served, which cancels the task that
    is still closing the Staffroom: its SQLite connections were left open and the process never
    exited. Here the signal stops serving and the code after ``serve()`` closes everything.
    """
    import asyncio

    import uvicorn  # defined here: `staffroom --help` does not import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.handle_exit, sig, None)
            try:
                yield
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)

    return _Server(config)


def _logging(level: str) -> None:
    # Our own loggers (webhook deliveries, failed requests) beside uvicorn's access log.
    logger = logging.getLogger("staffroom")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level.upper())


def _fail(message: str) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(2)


__all__ = ["bind", "check_auth", "serve"]
