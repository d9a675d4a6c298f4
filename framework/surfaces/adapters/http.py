"""The adapters' webhooks on the server, and their config (the ``adapters:`` section).

``POST /adapters/slack/events`` and ``POST /adapters/feishu/events`` take the platforms'
event callbacks. They need no bearer token: the platform's signature is the credential
(401 with the JSON error body when it does not check out). A body that is not the
platform's shape (:class:`SlackCallback`, :class:`FeishuCallback`, read from the raw bytes
the signature is over) is 400; each refusal is logged. A platform that is not configured
answers 404.

The config is the ``adapters:`` section of the server's config file (other sections are the
server's own), read like every spec file, so a mistake is ``file:line field: fix``. A secret
is written inline or named by environment variable (``signing_secret_env: VARIABLE``),
resolved once here::

    adapters:
      slack:
        signing_secret_env: SLACK_SIGNING_SECRET
        bot_token_env: SLACK_BOT_TOKEN
        groups:
          C0LAUNCH42: {scenario: tech-article, mode: thread}
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from framework.errors import InputError
from framework.serving.gateway import Gateway
from framework.specs.yaml_loader import SpecModel, load_yaml_file, validate
from framework.surfaces.adapters.base import ACK_WITHIN, Bridge, Challenge, ChatAdapter, Unverified
from framework.surfaces.adapters.feishu import FeishuAdapter, FeishuDoc
from framework.surfaces.adapters.feishu_events import FeishuCallback
from framework.surfaces.adapters.scheduled import ScheduledChats
from framework.surfaces.adapters.slack import SlackAdapter, SlackCallback, SlackDoc
from framework.surfaces.server.limits import BodyLimits
from framework.surfaces.server.problems import ERROR_RESPONSES, Problem, error_responses

log = logging.getLogger("staffroom.adapters")


class AdaptersConfigError(InputError):
    """The ``adapters:`` section of the server config is malformed."""


class AdaptersConfig(BaseModel):
    """The chat platforms the server answers for (none by default)."""

    model_config = ConfigDict(extra="forbid")

    slack: SlackDoc | None = None
    feishu: FeishuDoc | None = None
    ack_within: float = Field(
        default=ACK_WITHIN,
        gt=0,
        le=2.8,
        description="seconds a webhook waits for its message to be accepted before it "
        "answers anyway (platforms resend after 3)",
    )


class _ConfigFile(SpecModel):
    # The server's own sections (tokens, webhooks, heartbeat) are read by its config module.
    model_config = ConfigDict(extra="ignore")

    adapters: AdaptersConfig | None = None


def load_adapters(
    path: str | Path | None, *, environ: Mapping[str, str] | None = None
) -> AdaptersConfig:
    """The ``adapters:`` section of ``path`` (none: no platforms), secrets resolved."""
    if path is None:
        return AdaptersConfig()
    data, lines = load_yaml_file(path, error_cls=AdaptersConfigError)
    if not isinstance(data, dict) or data.get("adapters") is None:
        return AdaptersConfig()
    doc = validate(_ConfigFile, data, file=path, lines=lines, error_cls=AdaptersConfigError)
    config = doc.adapters or AdaptersConfig()
    env = os.environ if environ is None else environ
    for where, model in _secret_holders(config):
        _resolve(model, ("adapters", *where), doc, env)
    return config


def _secret_holders(config: AdaptersConfig) -> list[tuple[tuple[str, ...], BaseModel]]:
    found: list[tuple[tuple[str, ...], BaseModel]] = []
    for name, platform in (("slack", config.slack), ("feishu", config.feishu)):
        if platform is None:
            continue
        found.append(((name,), platform))
        found += [((name, "employees", e), d) for e, d in platform.employees.items()]
    return found


def _resolve(
    model: BaseModel, where: tuple[str, ...], doc: _ConfigFile, env: Mapping[str, str]
) -> None:
    for name in type(model).model_fields:
        variable = getattr(model, name)
        if not name.endswith("_env") or variable is None:
            continue
        secret = name.removesuffix("_env")
        field = ".".join((*where, name))
        if getattr(model, secret) is not None:
            raise AdaptersConfigError(
                f"both {secret} and {name} are set",
                file=doc.source,
                line=doc.line_of(*where, name),
                field=field,
                fix=f"keep one: {name} (the secret stays out of the file) or {secret}",
            )
        value = env.get(variable, "")
        if not value:
            raise AdaptersConfigError(
                f"environment variable {variable} is not set",
                file=doc.source,
                line=doc.line_of(*where, name),
                field=field,
                fix=f"export {variable} before starting the server",
            )
        setattr(model, secret, value)


@dataclass
class Adapters(ScheduledChats):
    """The configured platforms' bridges of one server (what :meth:`AdapterRoutes.start` built);
    the scheduler delivers through them (:class:`ScheduledChats`)."""

    bridges: dict[str, Bridge]

    async def stop(self) -> None:
        """Wait for messages still being accepted and replies still being sent, then stop."""
        for bridge in self.bridges.values():
            await bridge.stop()


class AdapterRoutes:
    """The chat platforms' webhooks as a server mounts them:
    ``create_app(gateway, config, adapters=AdapterRoutes(load_adapters(path)))``.

    The app factory hands it what it needs (:meth:`bind`: the gateway and the body cap of a
    platform's event) and starts and stops it with the app; it reads nothing else of the
    server, and the server knows it only as its ``Mount`` protocol.
    """

    def __init__(self, config: AdaptersConfig | None = None) -> None:
        self.config = config or AdaptersConfig()
        self.router = _router(self)
        """``POST /adapters/slack/events`` and ``POST /adapters/feishu/events``."""
        self._gateway: Gateway | None = None
        self._cap = BodyLimits().adapters
        self._running: Adapters | None = None

    def bind(self, gateway: Gateway, body_cap: int) -> None:
        """Serve ``gateway``; read at most ``body_cap`` bytes of a platform's event."""
        self._gateway, self._cap = gateway, body_cap

    def start(self) -> Adapters:
        """Build the configured adapters and start sending replies (once).

        The server calls it when it starts, so replies to messages accepted before a restart
        reach the platform too; the first webhook call starts them otherwise. :meth:`stop`,
        after the gateway has closed, sends the last replies.
        """
        if self._running is not None:
            return self._running
        if self._gateway is None:
            raise RuntimeError("AdapterRoutes.start() before bind(): the app binds it first")
        adapters: list[ChatAdapter] = []
        if self.config.slack is not None:
            adapters.append(SlackAdapter(self.config.slack))
        if self.config.feishu is not None:
            adapters.append(FeishuAdapter(self.config.feishu))
        gateway, within = self._gateway, self.config.ack_within
        bridges = {a.platform: Bridge(gateway, a, ack_within=within) for a in adapters}
        for bridge in bridges.values():
            bridge.start()
        self._running = Adapters(bridges)
        return self._running

    async def stop(self) -> None:
        """Wait for messages still being accepted and replies still being sent, then stop."""
        running, self._running = self._running, None
        if running is not None:
            await running.stop()

    async def handle(self, request: Request, platform: str) -> JSONResponse:
        """One callback of ``platform``: checked, read, and its message accepted once."""
        # Its cap is enforced as the body streams in (the server's guard), and again here for
        # an app without that guard.
        cap = self._cap
        bridge = self.start().bridges.get(platform)
        if bridge is None:
            raise Problem(
                404,
                "not_configured",
                f"no {platform} adapter is configured on this server",
                fix=f"add a `{platform}:` section under `adapters:` in the server config",
            )
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > cap:  # read no further: nobody has checked the signature yet
                raise Problem(
                    413,
                    "too_large",
                    f"a platform event is far smaller than {cap:,} bytes",
                    fix="only the platform may call this URL",
                )
        try:
            found = bridge.adapter.read(request.headers, bytes(body))
        except Unverified as exc:
            log.warning("%s webhook refused: %s", platform, exc.message)
            raise Problem(401, "unverified", exc.message, field=exc.field, fix=exc.fix) from None
        except InputError as exc:
            log.warning("%s webhook malformed: %s", platform, exc.message)
            raise Problem(400, "bad_input", exc.message, field=exc.field, fix=exc.fix) from None
        if isinstance(found, Challenge):
            return JSONResponse({"challenge": found.value})
        if found is None:
            return JSONResponse(
                Answer(outcome="ignored", reason="not a message event").model_dump()
            )
        delivery = await bridge.accept(found)
        return JSONResponse(delivery.to_dict())


class Answer(BaseModel):
    """What a webhook answers: the challenge, or what became of the message."""

    ok: bool = True
    challenge: str | None = None
    outcome: str | None = None
    session: str | None = None
    reason: str | None = None


def _request(model: type[BaseModel], headers: dict[str, tuple[bool, str]]) -> dict[str, Any]:
    """The request a platform sends, for the OpenAPI document. The routes read the raw body
    themselves (the signature is over its bytes), so FastAPI cannot derive it: the body's
    JSON Schema is the model the adapter reads it with, its ``$defs`` inlined."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                return inline(defs[ref.rsplit("/", 1)[-1]])
            return {key: inline(value) for key, value in node.items()}
        return [inline(item) for item in node] if isinstance(node, list) else node

    parameters = [
        {"name": name, "in": "header", "required": required, "description": text}
        | {"schema": {"type": "string"}}
        for name, (required, text) in headers.items()
    ]
    content = {"application/json": {"schema": inline(schema)}}
    return {"parameters": parameters, "requestBody": {"required": True, "content": content}}


_REFUSALS = error_responses(
    (400, "Not the platform's JSON (the field is named)"),
    (401, "The platform's signature, timestamp or verification token does not check out"),
    (404, "The platform is not configured on this server"),
    (413, "A body larger than any platform event"),
)

_SLACK = _request(
    SlackCallback,
    {
        "X-Slack-Request-Timestamp": (True, "Unix seconds; more than 5 minutes off is a 401"),
        "X-Slack-Signature": (True, "v0= HMAC-SHA256 of v0:{timestamp}:{raw body}"),
    },
)
_FEISHU = _request(
    FeishuCallback,
    {
        "X-Lark-Request-Timestamp": (False, "signed events: Unix seconds"),
        "X-Lark-Request-Nonce": (False, "signed events: a nonce"),
        "X-Lark-Signature": (False, "sha256(timestamp + nonce + encrypt_key + raw body)"),
    },
)


def _router(routes: AdapterRoutes) -> APIRouter:
    router = APIRouter(prefix="/adapters", tags=["adapters"], responses=ERROR_RESPONSES)
    _callback(
        router,
        routes,
        "slack",
        "Slack Events API callback",
        "Slack's event callbacks: signed with the app's signing secret.",
        _SLACK,
    )
    _callback(
        router,
        routes,
        "feishu",
        "Feishu/Lark event callback",
        "Feishu/Lark event subscriptions: token-checked, signed and encrypted when configured.",
        _FEISHU,
    )
    return router


def _callback(
    router: APIRouter,
    routes: AdapterRoutes,
    platform: str,
    summary: str,
    description: str,
    request_doc: dict[str, Any],
) -> None:
    """``POST /adapters/{platform}/events``: one platform's event callbacks."""

    async def events(request: Request) -> Any:
        return await routes.handle(request, platform)

    # Named as a function per platform was, so the OpenAPI operation ids stay the same.
    router.add_api_route(
        f"/{platform}/events",
        events,
        methods=["POST"],
        name=f"{platform}_events",
        response_model=Answer,
        responses=_REFUSALS,
        summary=summary,
        description=description,
        openapi_extra=request_doc,
    )


__all__ = [
    "AdapterRoutes",
    "Adapters",
    "AdaptersConfig",
    "AdaptersConfigError",
    "load_adapters",
]
