"""Feishu / Lark: event subscriptions in (``POST /adapters/feishu/events``), IM messages out.

In, following the open platform's event rules (and lark-oapi's dispatcher, whose checks this
repeats with 401 answers instead of its 500s), every body read as :class:`FeishuCallback`
(400 when it is not one):

- an encrypted body ``{"encrypt": …}`` is AES-256-CBC with the key sha256(encrypt_key),
  decrypted with lark-oapi's ``AESCipher``;
- when the app has an encrypt key, Feishu signs every event: ``X-Lark-Signature`` must be
  sha256(timestamp + nonce + encrypt_key + body) (headers ``X-Lark-Request-Timestamp``,
  ``X-Lark-Request-Nonce``);
- the verification token (``header.token`` in schema 2.0, ``token`` in a challenge) must be
  the app's;
- ``url_verification`` is answered with its ``challenge`` (plain or encrypted);
- schema 2.0 ``im.message.receive_v1`` events are read: ``text`` and ``post`` messages, with
  ``@_user_1`` placeholders resolved from ``mentions`` in one pass (an employee's bot becomes
  ``@<employee id>``; at most ``MAX_TEXT`` characters in all). Feishu retries an event it got
  no 200 for; the retry carries the same ``message_id``, which the gateway dedupes.

Several apps may point at the same URL (an employee with an app of its own answers as that
app): the request is matched to the app whose signature, key and token fit. Out, replies are
sent with lark-oapi's client (``im.v1.message.create``, or ``reply`` in a thread) as the
employee's own app, else the shared app with ``[display name]`` before the text.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from framework.errors import InputError
from framework.specs.yaml_loader import spec_error
from framework.surfaces.adapters.base import (
    Challenge,
    ChatAdapter,
    Inbound,
    PlatformError,
    Unverified,
    expand,
    read_data,
    read_json,
    same_secret,
    unix_time,
)
from framework.surfaces.adapters.feishu_events import (
    FIX,
    MESSAGE_EVENT,
    PLACEHOLDER,
    FeishuCallback,
    FeishuEvent,
    FeishuMention,
    message_text,
)
from framework.surfaces.adapters.mapping import GroupMapping, MappingDoc, Place

_ID_TYPES = {"ou_": "open_id", "on_": "union_id"}


class FeishuAppFields(BaseModel):
    """One Feishu/Lark app: its credentials and how its bot is mentioned."""

    model_config = ConfigDict(extra="forbid")

    app_id: str | None = Field(default=None, examples=["cli_a1b2c3"])
    app_secret: str | None = None
    app_secret_env: str | None = Field(default=None, examples=["FEISHU_APP_SECRET"])
    verification_token: str | None = None
    verification_token_env: str | None = Field(default=None, examples=["FEISHU_VERIFICATION_TOKEN"])
    encrypt_key: str | None = None
    encrypt_key_env: str | None = Field(default=None, examples=["FEISHU_ENCRYPT_KEY"])
    bot_name: str | None = Field(default=None, description="the bot's name, as @mentions show it")
    bot_ids: list[str] = Field(
        default_factory=list, description="the bot's open_id / union_id in mentions"
    )


class FeishuEmployeeDoc(FeishuAppFields):
    """An employee on Feishu: an app of its own (``app_id`` …), or just how it is named."""

    @model_validator(mode="after")
    def _whole_app(self) -> Self:
        if self.app_id is not None:
            _check_app(self)
        return self


class FeishuDoc(MappingDoc, FeishuAppFields):
    """The ``feishu:`` section of the adapters config (the shared app, then the mapping)."""

    domain: str = Field(
        default="https://open.feishu.cn", description="https://open.larksuite.com for Lark"
    )
    max_clock_skew: int = Field(
        default=0,
        ge=0,
        description="seconds X-Lark-Request-Timestamp may be off; 0: not checked (a replayed "
        "event is a duplicate the gateway ignores)",
    )
    employees: dict[str, FeishuEmployeeDoc] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shared_app(self) -> Self:
        _check_app(self)
        return self


def _check_app(doc: FeishuAppFields) -> None:
    missing = [
        name
        for name in ("app_id", "app_secret", "verification_token")
        if getattr(doc, name) is None and getattr(doc, f"{name}_env", None) is None
    ]
    if missing:
        raise spec_error(
            f"a Feishu app needs {', '.join(missing)}",
            "copy them from the app's Credentials and Event Subscriptions pages (write "
            "`<name>_env: VARIABLE` to keep a secret out of the file)",
        )


@dataclass
class _App:
    employee: str | None
    doc: FeishuAppFields
    domain: str
    client: Any = field(default=None, repr=False)

    def lark_client(self) -> Any:
        if self.client is None:
            lark = _lark()
            self.client = (
                lark.Client.builder()
                .app_id(self.doc.app_id)
                .app_secret(self.doc.app_secret)
                .domain(self.domain)
                .build()
            )
        return self.client


class FeishuAdapter(ChatAdapter):
    """Feishu/Lark event subscriptions and IM API for one shared app (+ employees' apps)."""

    platform: ClassVar[str] = "feishu"

    def __init__(self, doc: FeishuDoc) -> None:
        self.doc = doc
        self.mapping = GroupMapping("feishu", doc, user_place=_user_place)
        self._shared = _App(None, doc, doc.domain)
        self._own = {e: _App(e, d, doc.domain) for e, d in doc.employees.items() if d.app_id}
        self.mapping.answer_dms_as(set(self._own))
        self._apps = [self._shared, *self._own.values()]

    def read(self, headers: Mapping[str, str], body: bytes) -> Challenge | Inbound | None:
        """Verify the request, decrypt it, then read it (see the module docstring)."""
        apps = self._signed_by(headers, body)  # a signature is checked before any parsing
        callback = read_json(FeishuCallback, body, what="not a Feishu event", fix=FIX)
        if callback.encrypt is not None:
            callback, apps = self._decrypt(callback.encrypt, apps)
        header = callback.header
        app = self._token_owner(callback.token if header is None else header.token, apps)
        if callback.type == "url_verification":
            return Challenge(callback.challenge or "")
        if app.doc.encrypt_key and not headers.get("x-lark-signature"):
            raise Unverified(
                "the event is not signed, though the app has an encrypt key",
                field="X-Lark-Signature",
                fix="only Feishu may call this URL; check the app's Encrypt Key",
            )
        if header is None or header.event_type != MESSAGE_EVENT:
            return None
        what = f"not an {MESSAGE_EVENT} event"
        event = read_data(FeishuEvent, callback.event, what=what, fix=FIX, at=("event",))
        return self._inbound(event, app)

    def _signed_by(self, headers: Mapping[str, str], body: bytes) -> list[_App]:
        signature = headers.get("x-lark-signature", "")
        if not signature:
            return self._apps
        stamp = headers.get("x-lark-request-timestamp", "")
        nonce = headers.get("x-lark-request-nonce", "")
        skew, seconds = self.doc.max_clock_skew, unix_time(stamp)
        if skew and (seconds is None or abs(time.time() - seconds) > skew):
            raise Unverified(
                f"X-Lark-Request-Timestamp is more than {skew} seconds off",
                field="X-Lark-Request-Timestamp",
                fix="check this server's clock, or raise max_clock_skew",
            )
        found = [
            app
            for app in self._apps
            if app.doc.encrypt_key
            and same_secret(_signature(stamp, nonce, app.doc.encrypt_key, body), signature)
        ]
        if not found:
            raise Unverified(
                "X-Lark-Signature does not match",
                field="X-Lark-Signature",
                fix="check the app's Encrypt Key (Event Subscriptions) in the adapters config",
            )
        return found

    def _decrypt(self, encrypted: str, apps: list[_App]) -> tuple[FeishuCallback, list[_App]]:
        cipher, what = _lark().core.utils.AESCipher, "not a Feishu event (decrypted)"
        malformed: InputError | None = None
        for app in (a for a in apps if a.doc.encrypt_key):
            try:
                plain = cipher(app.doc.encrypt_key).decrypt_str(encrypted)
                return read_json(FeishuCallback, plain, what=what, fix=FIX, at=("encrypt",)), [app]
            except InputError as exc:  # this key's malformed event, or a wrong key's noise
                malformed = exc
            except ValueError:  # a wrong key (or no ciphertext): base64, padding, not UTF-8
                continue
        if malformed is not None:
            raise malformed
        raise Unverified(
            "the event cannot be decrypted with any app's encrypt key",
            field="encrypt",
            fix="set the app's Encrypt Key (Event Subscriptions) as encrypt_key",
        )

    def _token_owner(self, token: str | None, apps: list[_App]) -> _App:
        for app in apps:
            expected = app.doc.verification_token or ""
            if expected and token is not None and same_secret(expected, token):
                return app
        raise Unverified(
            "the verification token does not match",
            field="token",
            fix="set the app's Verification Token (Event Subscriptions) as verification_token",
        )

    def _inbound(self, event: FeishuEvent, app: _App) -> Inbound | None:
        message = event.message
        text = message_text(message)
        if text is None:
            return None
        names: dict[str, str] = {}
        for mention in message.mentions:  # the first of a key counts, as Feishu lists them
            if mention.key not in names and PLACEHOLDER.fullmatch(mention.key):
                names[mention.key] = self._mention(mention)
        text = expand(text, PLACEHOLDER, names)
        ids = event.sender.sender_id
        ours = {i for a in self._apps for i in a.doc.bot_ids}
        return Inbound(
            message_id=message.message_id,
            text=text.strip(),
            sender=(ids.all() or ["unknown"])[-1],
            author=self.mapping.author(*ids.all()),
            place=Place(message.chat_id, message.root_id, direct=message.chat_type == "p2p"),
            root=message.message_id,
            parent=message.parent_id or message.root_id,
            from_bot=event.sender.sender_type != "user",
            from_us=bool(ours.intersection(ids.all())),
            employee=app.employee,
        )

    def _mention(self, mention: FeishuMention) -> str:
        ids = set(mention.id.all())

        def names_bot(doc: FeishuAppFields) -> bool:
            return doc.bot_name == mention.name or bool(ids.intersection(doc.bot_ids))

        for employee, doc in self.doc.employees.items():
            if names_bot(doc):
                return f"@{employee}"
        if names_bot(self.doc):
            return ""  # the shared bot itself: the message is for the room
        if any(i in self.doc.users for i in ids):
            return f"@{self.mapping.author(*mention.id.all())}"
        return f"@{mention.name}" if mention.name else ""

    async def send(self, place: Place, employee: str, name: str, text: str, *, uid: str) -> str:
        """Send ``text`` as ``employee``: its own app, else the shared one with its name."""
        app = self._own.get(employee, self._shared)
        said = text if app.employee == employee else f"[{name}] {text}"
        content = json.dumps({"text": said}, ensure_ascii=False)
        im = _lark().api.im.v1
        client = app.lark_client()
        if place.thread:
            body = im.ReplyMessageRequestBody.builder().content(content).msg_type("text")
            request = (
                im.ReplyMessageRequest.builder()
                .message_id(place.thread)
                .request_body(body.reply_in_thread(True).uuid(uid[:50]).build())
                .build()
            )
            response = await asyncio.to_thread(client.im.v1.message.reply, request)
        else:
            body = im.CreateMessageRequestBody.builder().receive_id(place.channel)
            request = (
                im.CreateMessageRequest.builder()
                .receive_id_type(place.id_type)
                .request_body(body.msg_type("text").content(content).uuid(uid[:50]).build())
                .build()
            )
            response = await asyncio.to_thread(client.im.v1.message.create, request)
        if not response.success():
            raise PlatformError(
                f"Feishu refused the message to {place.channel}: {response.code} {response.msg}"
            )
        return str(response.data.message_id)


def _signature(stamp: str, nonce: str, key: str, body: bytes) -> str:
    return hashlib.sha256((stamp + nonce + key).encode() + body).hexdigest()


def _user_place(user: str) -> Place | None:
    # A person known only by id: message them directly by the id's kind.
    kind = _ID_TYPES.get(user[:3])
    return Place(user, direct=True, id_type=kind) if kind is not None else None


def _lark() -> Any:
    # lark-oapi imports every API module it has (seconds): only a server with a Feishu app
    # pays for it. It ships no type information, hence Any.
    import lark_oapi  # type: ignore[import-untyped]

    return lark_oapi
