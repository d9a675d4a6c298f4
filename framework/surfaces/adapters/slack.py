"""Slack: the Events API in (``POST /adapters/slack/events``), ``chat.postMessage`` out.

In: every request's ``X-Slack-Signature`` (the v0 HMAC-SHA256 of ``v0:{timestamp}:{body}``
with the app's signing secret, over the body's bytes as they came) and a
``X-Slack-Request-Timestamp`` within 5 minutes, else 401; then the body read as
:class:`SlackCallback` (400 when it is not one); the ``url_verification`` challenge;
``message`` and ``app_mention`` events (the same message in both is one message: its id is
``slack-<channel>-<ts>``). ``<@U…>`` mentions of an employee's bot user become
``@<employee id>``, of a mapped person ``@<name>``. Retries (``X-Slack-Retry-Num``) are
redeliveries the gateway dedupes.

Out: as the shared bot with the employee's ``username`` and icon (needs the
``chat:write.customize`` scope), or with the employee's own ``bot_token`` when it has an app
of its own. Messages with our apps' ``bot_id``/``app_id`` (or an employee bot's user id)
are echoes and ignored; other bots' messages reach the room.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
from collections.abc import Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator
from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler

from framework.specs.yaml_loader import spec_error
from framework.surfaces.adapters.base import (
    Challenge,
    ChatAdapter,
    Inbound,
    Unverified,
    bounded,
    read_json,
    same_secret,
    unix_time,
)
from framework.surfaces.adapters.mapping import GroupMapping, MappingDoc, Place

MAX_SKEW = 300
"""Seconds a request's timestamp may be off (Slack's own rule: replays are refused)."""

_MENTION = re.compile(r"<([@#!])([^<>|]+)(?:\|([^<>]*))?>")
"""``<@U…>``, ``<#C…|name>``, ``<!here>``: no ``<`` inside, so a run of ``<@<@<@…`` is read in
linear time (with ``[^>|]`` each ``<`` scanned to the end of the text: 13 s for 40 kB)."""
_USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")
_HANDLED = {None, "bot_message", "thread_broadcast", "file_share", "me_message"}
"""Message subtypes that carry something said (edits, joins and deletions do not)."""


class SlackEmployeeDoc(BaseModel):
    """How one employee appears on Slack."""

    model_config = ConfigDict(extra="forbid")

    username: str | None = Field(default=None, description="name shown (default: its display name)")
    icon_url: str | None = None
    icon_emoji: str | None = Field(default=None, examples=[":memo:"])
    user_id: str | None = Field(default=None, description="its bot user (U…): <@U…> mentions it")
    bot_token: str | None = Field(default=None, description="an app of its own: its xoxb- token")
    bot_token_env: str | None = None
    signing_secret: str | None = Field(default=None, description="that app's signing secret")
    signing_secret_env: str | None = None
    app_id: str | None = Field(
        default=None, description="that app's id (A…): its messages are echoes"
    )
    bot_id: str | None = Field(default=None, description="that app's bot id (B…)")


class SlackDoc(MappingDoc):
    """The ``slack:`` section of the adapters config."""

    signing_secret: str | None = None
    signing_secret_env: str | None = Field(default=None, examples=["SLACK_SIGNING_SECRET"])
    bot_token: str | None = None
    bot_token_env: str | None = Field(default=None, examples=["SLACK_BOT_TOKEN"])
    app_id: str | None = Field(default=None, description="the shared app's id (A…)")
    bot_id: str | None = Field(default=None, description="the shared app's bot id (B…)")
    bot_user_id: str | None = Field(default=None, description="the shared bot's user (U…)")
    api_url: str = Field(default="https://slack.com/api/", description="Web API base URL")
    employees: dict[str, SlackEmployeeDoc] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shared_app(self) -> Self:
        missing = [
            name
            for name in ("signing_secret", "bot_token")
            if getattr(self, name) is None and getattr(self, f"{name}_env") is None
        ]
        if missing:
            raise spec_error(
                f"Slack needs the shared app's {' and '.join(missing)}",
                "copy them from the app's Basic Information and OAuth pages; write "
                "`signing_secret_env: VARIABLE` to keep a secret out of the file",
            )
        return self


class SlackEvent(BaseModel):
    """The ``event`` of an Events API callback: the fields read (Slack sends more)."""

    model_config = ConfigDict(extra="ignore")

    type: str = Field(examples=["message"])
    subtype: str | None = None
    channel: str = ""
    channel_type: str | None = None
    user: str | None = None
    bot_id: str | None = None
    app_id: str | None = None
    text: str = ""
    ts: str = ""
    thread_ts: str | None = None
    team: str | None = None


class SlackCallback(BaseModel):
    """An Events API request body: ``url_verification`` or an ``event_callback``."""

    model_config = ConfigDict(extra="ignore")

    type: str = Field(examples=["event_callback"])
    challenge: str | None = None
    team_id: str | None = None
    api_app_id: str | None = None
    event: SlackEvent | None = None


class SlackAdapter(ChatAdapter):
    """Slack's Events API and Web API for one workspace's apps."""

    platform: ClassVar[str] = "slack"

    def __init__(self, doc: SlackDoc) -> None:
        self.doc = doc
        self.mapping = GroupMapping(
            "slack", doc, scope_parts=1, restore=str.upper, user_place=_user_place
        )
        own = {e for e, d in doc.employees.items() if d.bot_token}
        self.mapping.answer_dms_as(own)
        self._secrets = [s for s in [doc.signing_secret] if s] + [
            d.signing_secret for d in doc.employees.values() if d.signing_secret
        ]
        self._app_employees = {d.app_id: e for e, d in doc.employees.items() if d.app_id}
        self._user_employees = {d.user_id: e for e, d in doc.employees.items() if d.user_id}
        self._our_apps = {a for a in [doc.app_id, *self._app_employees] if a}
        self._our_bots = {b for b in [doc.bot_id, *(d.bot_id for d in doc.employees.values())] if b}
        self._clients: dict[str, WebClient] = {}
        self._team: str | None = None
        """The workspace id (room ids start with it): from events, else ``auth.test``."""

    def read(self, headers: Mapping[str, str], body: bytes) -> Challenge | Inbound | None:
        """Verify the request, then read it (see the module docstring)."""
        self._verify(headers, body)
        envelope = read_json(
            SlackCallback,
            body,
            what="not a Slack Events API request",
            fix="send the JSON Slack's Events API posts",
        )
        if envelope.type == "url_verification":
            return Challenge(envelope.challenge or "")
        event = envelope.event
        if envelope.type != "event_callback" or event is None:
            return None
        if event.type not in ("message", "app_mention") or event.subtype not in _HANDLED:
            return None
        if not event.channel or not event.ts:
            return None
        sender = event.user or event.bot_id or "unknown"
        from_us = (
            event.bot_id in self._our_bots
            or event.app_id in self._our_apps
            or event.user in self._user_employees
        )
        return Inbound(
            message_id=f"slack-{event.channel}-{event.ts}",
            text=self._text(event.text),
            sender=sender,
            author=self.mapping.author(event.user, event.bot_id),
            place=Place(event.channel, event.thread_ts, direct=event.channel_type == "im"),
            root=event.ts,
            # A thread reply replies to the thread's first message (Slack threads are flat).
            parent=f"slack-{event.channel}-{event.thread_ts}"
            if event.thread_ts and event.thread_ts != event.ts
            else None,
            scope=(self._learn_team(envelope.team_id or event.team or "t"),),
            from_bot=event.bot_id is not None or event.subtype == "bot_message",
            from_us=from_us,
            employee=self._app_employees.get(envelope.api_app_id or ""),
        )

    def _learn_team(self, team: str) -> str:
        if self._team is None and team != "t":
            self._team = team
        return team

    def _verify(self, headers: Mapping[str, str], body: bytes) -> None:
        stamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        fix = "check the app's signing secret (Basic Information) in the adapters config"
        if not stamp or not signature:
            raise Unverified(
                "the request is not signed",
                field="X-Slack-Signature",
                fix="only Slack may call this URL: " + fix,
            )
        seconds = unix_time(stamp)
        if seconds is None or abs(time.time() - seconds) > MAX_SKEW:
            raise Unverified(
                "X-Slack-Request-Timestamp is more than 5 minutes off (a replay?)",
                field="X-Slack-Request-Timestamp",
                fix="check this server's clock (NTP); Slack sends fresh requests",
            )
        # Over the bytes as they came: slack_sdk's verifier decodes the body first, which
        # raises on bytes that are not UTF-8 before any signature is compared.
        signed = b"v0:" + stamp.encode() + b":" + body
        for secret in self._secrets:
            digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
            if same_secret(f"v0={digest}", signature):
                return
        raise Unverified("X-Slack-Signature does not match", field="X-Slack-Signature", fix=fix)

    def _text(self, text: str) -> str:
        def mention(match: re.Match[str]) -> str:
            kind, target, label = match.group(1), match.group(2), match.group(3)
            if kind == "#":
                return f"#{label or target}"
            if kind == "!":
                return f"@{label or target}"
            if target in self._user_employees:
                return f"@{self._user_employees[target]}"
            if target == self.doc.bot_user_id:
                return ""  # the shared bot itself: the message is for the room
            return f"@{self.mapping.author(target)}"

        replaced = _MENTION.sub(mention, text)
        plain = replaced.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
        return bounded(plain.strip())

    async def send(self, place: Place, employee: str, name: str, text: str, *, uid: str) -> str:
        """Post ``text`` as ``employee`` with ``chat.postMessage`` (in a thread, in one)."""
        own = self.doc.employees.get(employee) or SlackEmployeeDoc()
        extra: dict[str, Any] = {}
        token = own.bot_token
        if token is None:
            token = self.doc.bot_token or ""
            extra = {"username": own.username or name}
            if own.icon_url:
                extra["icon_url"] = own.icon_url
            elif own.icon_emoji:
                extra["icon_emoji"] = own.icon_emoji
        escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        client = self._client(token)
        response = await asyncio.to_thread(
            client.chat_postMessage,
            channel=place.channel,
            text=escaped,
            thread_ts=place.thread,
            **extra,
        )
        return f"slack-{response.get('channel', place.channel)}-{response.get('ts', uid)}"

    async def scope(self) -> tuple[str, ...]:
        """The workspace (team) id, as its events carry it: asked of Slack once
        (``auth.test`` with the shared bot's token) when no event has said it yet."""
        if self._team is None:
            client = self._client(self.doc.bot_token or "")
            response = await asyncio.to_thread(client.auth_test)
            self._team = str(response.get("team_id") or "t")
        return (self._team,)

    def _client(self, token: str) -> WebClient:
        client = self._clients.get(token)
        if client is None:
            client = WebClient(token=token, base_url=self.doc.api_url, timeout=10)
            client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=2))
            self._clients[token] = client
        return client


def _user_place(user: str) -> Place | None:
    # chat.postMessage to a user id posts in the app's DM with them.
    return Place(user, direct=True) if _USER_ID.fullmatch(user) else None
