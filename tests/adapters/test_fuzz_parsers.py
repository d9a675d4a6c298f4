"""Hypothesis feeds the Slack and Feishu parsers (``SlackAdapter.read``, ``FeishuAdapter.read``)
what a caller could send: random bytes, JSON of any shape, deep nesting, and the platforms' own
shapes with any field of the wrong type, signed with the right secret or not (and, for Feishu,
encrypted with the right key or not), so every branch past the signature is reached.

What comes out is a challenge, a message or None, or our own ``InputError`` (``Unverified`` is
one, answered 401; the rest 400): never another exception, which the server would answer 500.
A message is at most ``MAX_TEXT`` characters, and maps to a session or to an ``InputError``, as
the bridge maps it. Bounded: a few hundred examples each, a deadline per example.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from datetime import timedelta
from typing import Any

import lark_oapi  # noqa: F401  (imported once here, not inside the first example's deadline)
from Crypto.Cipher import AES
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from framework.errors import InputError
from framework.surfaces.adapters.base import MAX_TEXT, Challenge, ChatAdapter, Inbound
from framework.surfaces.adapters.feishu import FeishuAdapter, FeishuDoc
from framework.surfaces.adapters.feishu_events import MESSAGE_EVENT
from framework.surfaces.adapters.slack import SlackAdapter, SlackDoc

FUZZ = settings(
    max_examples=250,
    deadline=timedelta(milliseconds=500),
    database=None,  # no example database kept between runs (each run explores afresh)
    suppress_health_check=[HealthCheck.too_slow],
)

SLACK_SECRET = "slack-fuzz-secret"
SLACK = SlackAdapter(
    SlackDoc(
        signing_secret=SLACK_SECRET,
        bot_token="xoxb-fuzz",
        bot_user_id="U0SHAREDBOT",
        dm_employee="pm",
        users={"U0ALICE": "alice"},
        employees={"engineer": {"user_id": "U0ENG", "bot_token": "xoxb-eng", "app_id": "A0ENG"}},
        groups={"C0THREADS": {"scenario": "team-chat", "mode": "thread"}, "*": {"scenario": "x"}},
    )
)
SHARED, ENGINEER = ("token-shared", "key-shared"), ("token-engineer", "key-engineer")
FEISHU = FeishuAdapter(
    FeishuDoc(
        app_id="cli_shared",
        app_secret="secret",
        verification_token=SHARED[0],
        encrypt_key=SHARED[1],
        bot_name="Staffroom",
        max_clock_skew=300,
        dm_employee="pm",
        users={"ou_alice": "alice"},
        employees={
            "engineer": {
                "app_id": "cli_eng",
                "app_secret": "secret",
                "verification_token": ENGINEER[0],
                "encrypt_key": ENGINEER[1],
                "bot_name": "研发工程师小E",
            }
        },
        groups={"oc_topics": {"scenario": "team-chat", "mode": "user"}, "*": {"scenario": "x"}},
    )
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
any_json = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)


def weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, each drawn ``weight`` times in ``sum(weights)``."""
    listed = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.sampled_from(listed).flatmap(lambda strategy: strategy)


def field(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a value of the right shape, one time in 16 any JSON at all (an event has a dozen
    fields: more often, and hardly an example would get past the first wrong one)."""
    return weighted((15, good), (1, any_json))


def pieces(*parts: str) -> st.SearchStrategy[str]:
    """Text made of ``parts`` (mention syntax, placeholders) and random bits."""
    return st.lists(st.sampled_from(parts) | st.text(max_size=4), max_size=12).map("".join)


def encoded(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return strategy.map(lambda value: json.dumps(value).encode())


long_id = st.text(min_size=120, max_size=300)
deep = st.integers(150, 5000).map(lambda n: b"[" * n + b"]" * n)

slack_event = st.fixed_dictionaries(
    {
        "type": field(weighted((3, st.sampled_from(["message", "app_mention"])), (1, st.text()))),
        "channel": field(
            weighted((4, st.sampled_from(["C0LAUNCH", "C0THREADS", "D0DM"])), (1, long_id))
        ),
        "text": field(pieces("<@U0ENG>", "<@U0ALICE|a>", "<#C1|x>", "<!here>", "<@", "&lt;")),
        "ts": field(weighted((4, st.just("1700000000.000100")), (1, long_id))),
    },
    optional={
        "subtype": field(st.sampled_from(["bot_message", "message_changed", "me_message"])),
        "channel_type": field(st.sampled_from(["channel", "im"])),
        "user": field(st.sampled_from(["U0ALICE", "U0ENG", "W0X"]) | long_id),
        "bot_id": field(st.sampled_from(["B0RIVAL", "B0SHARED"])),
        "app_id": field(st.sampled_from(["A0ENG", "A0OTHER"])),
        "thread_ts": field(st.sampled_from(["1700000000.000001"]) | long_id),
        "team": field(st.text(max_size=200)),
    },
)
slack_callback = st.fixed_dictionaries(
    {
        "type": field(weighted((4, st.just("event_callback")), (1, st.just("url_verification")))),
        "event": field(slack_event),
    },
    optional={
        "challenge": field(st.text()),
        "team_id": field(st.sampled_from(["T0TEAM1"]) | long_id),
        "api_app_id": field(st.sampled_from(["A0ENG", "A0SHARED"])),
    },
)
slack_bodies = weighted(
    (6, encoded(slack_callback)), (1, encoded(any_json)), (1, st.binary(max_size=200)), (1, deep)
)


def slack_headers(body: bytes, how: str, odd: str) -> dict[str, str]:
    stamp = str(int(time.time()))
    if how == "none":
        return {}
    if how == "odd":
        return {"x-slack-request-timestamp": odd, "x-slack-signature": odd}
    secret = SLACK_SECRET if how == "right" else "not-the-secret"
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    return {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={digest.hexdigest()}"}


# Header values as an ASGI server hands them over: latin-1 text.
header_text = st.text(st.characters(max_codepoint=255), max_size=40) | st.sampled_from(["1" * 5000])
signing = st.sampled_from(["right", "right", "right", "wrong", "none", "odd"])


@FUZZ
@given(body=slack_bodies, how=signing, odd=header_text)
def test_the_slack_parser_gives_a_result_or_our_own_error(body: bytes, how: str, odd: str) -> None:
    assert_read(SLACK, slack_headers(body, how, odd), body)


token = weighted((3, st.sampled_from([SHARED[0], ENGINEER[0]])), (1, st.sampled_from(["", "x"])))
ids = st.fixed_dictionaries(
    {},
    optional={
        "open_id": field(st.sampled_from(["ou_alice", "ou_bot"]) | long_id),
        "union_id": field(st.sampled_from(["on_x"])),
        "user_id": field(st.sampled_from(["u_1"]) | long_id),
    },
)
words = pieces("@_user_1", "@_user_2", "@_user_10", "@_all", "@", "_user_1", "hello ")
mention = st.fixed_dictionaries(
    {"key": field(st.sampled_from(["", "@_user_1", "@_user_2", "@", "l"]) | st.text(max_size=4))},
    optional={
        "id": field(ids),
        "name": field(st.sampled_from(["研发工程师小E", "Staffroom", "Tom", ""]) | long_id),
    },
)
node = st.fixed_dictionaries(
    {"tag": st.sampled_from(["text", "at", "a", "img"])},
    optional={
        "text": field(words),
        "user_id": field(st.sampled_from(["@_user_1"])),
        "href": field(st.text(max_size=20)),
        "width": field(st.integers()),
    },
)
text_content = st.fixed_dictionaries({"text": field(words)})
post_content = st.fixed_dictionaries(
    {"content": field(st.lists(field(st.lists(field(node), max_size=3)), max_size=3))},
    optional={"title": field(st.text(max_size=20))},
)
content = weighted(
    (3, st.one_of(text_content, post_content).map(json.dumps)),
    (1, any_json.map(json.dumps)),
    (1, st.text(max_size=20)),
)
message = st.fixed_dictionaries(
    {
        "message_id": field(weighted((4, st.sampled_from(["om_1", "om_2"])), (1, long_id))),
        "chat_id": field(weighted((4, st.sampled_from(["oc_launch", "oc_topics"])), (1, long_id))),
        "message_type": field(st.sampled_from(["text", "post", "text", "post", "image"])),
        "content": field(content),
    },
    optional={
        "root_id": field(st.sampled_from(["om_root"]) | long_id),
        "chat_type": field(st.sampled_from(["group", "p2p"])),
        "mentions": field(st.lists(field(mention), max_size=4)),
    },
)
sender = st.fixed_dictionaries(
    {}, optional={"sender_id": field(ids), "sender_type": field(st.sampled_from(["user", "app"]))}
)
header = st.fixed_dictionaries(
    {
        "event_type": field(st.sampled_from([MESSAGE_EVENT, MESSAGE_EVENT, "im.chat.updated_v1"])),
        "token": field(token),
    }
)
feishu_event = st.fixed_dictionaries(
    {"message": field(message)}, optional={"sender": field(sender)}
)
challenge = st.fixed_dictionaries(
    {"type": field(st.just("url_verification")), "token": field(token)},
    optional={"challenge": field(st.text())},
)
schema2 = st.fixed_dictionaries(
    {"schema": st.just("2.0"), "header": field(header), "event": field(feishu_event)}
)
feishu_callback = weighted((8, schema2), (1, challenge), (1, any_json))


def encrypted(plain: bytes, key: str) -> bytes:
    """``plain`` as Feishu encrypts it: AES-256-CBC, key sha256(encrypt_key), iv first."""
    pad = 16 - len(plain) % 16
    iv = b"\0" * 16
    cipher = AES.new(hashlib.sha256(key.encode()).digest(), AES.MODE_CBC, iv)
    data = base64.b64encode(iv + cipher.encrypt(plain + bytes([pad]) * pad)).decode()
    return json.dumps({"encrypt": data}).encode()


@st.composite
def feishu_requests(draw: st.DrawFn) -> tuple[dict[str, str], bytes]:
    plain = json.dumps(draw(feishu_callback), ensure_ascii=draw(st.booleans())).encode()
    key = draw(st.sampled_from([SHARED[1], ENGINEER[1], SHARED[1], "not-a-key"]))
    noise = encoded(st.fixed_dictionaries({"encrypt": field(st.text(max_size=40))}))
    body = draw(
        weighted(
            (5, st.just(plain)),
            (3, st.just(encrypted(plain, key))),
            (1, noise | st.binary(max_size=200) | deep),
        )
    )
    how = draw(signing)
    if how == "none":
        return {}, body
    stamp, nonce = str(int(time.time())), draw(st.text(st.characters(max_codepoint=255)))
    if how == "odd":
        stamp = draw(header_text)
    signer = key if how == "right" else "not-a-key"
    digest = hashlib.sha256((stamp + nonce + signer).encode() + body).hexdigest()
    headers = {"x-lark-request-timestamp": stamp, "x-lark-request-nonce": nonce}
    return headers | {"x-lark-signature": digest if how != "odd" else draw(header_text)}, body


@FUZZ
@given(request=feishu_requests())
def test_the_feishu_parser_gives_a_result_or_our_own_error(
    request: tuple[dict[str, str], bytes],
) -> None:
    assert_read(FEISHU, *request)


def assert_read(adapter: ChatAdapter, headers: dict[str, str], body: bytes) -> None:
    try:
        found = adapter.read(headers, body)
    except InputError as exc:  # 400, or 401 (Unverified)
        event(f"refused: {type(exc).__name__} {exc.field}")  # --hypothesis-show-statistics
        return
    assert found is None or isinstance(found, Challenge | Inbound)
    event(f"read: {type(found).__name__}")
    if isinstance(found, Inbound):
        assert len(found.text) <= MAX_TEXT
        try:
            target = adapter.mapping.target(
                found.place,
                found.sender,
                scope=found.scope,
                root=found.root,
                author=found.author,
                employee=found.employee,
            )
        except InputError:  # the bridge answers "invalid"
            return
        assert target is None or target.key.startswith(("room:", "dm:"))
