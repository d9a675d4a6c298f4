"""Feishu/Lark through the real server: token-checked, signed and AES-encrypted events in,
lark-oapi's client out to a local fake of the open API (no network). Employees use the
simulator (a test double)."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adapter_harness import Served, config_file, payload, serve
from Crypto.Cipher import AES
from fake_platform import Call, FakePlatform

SHARED = ("v-token-shared", "key-shared")
ENGINEER = ("v-token-engineer", "key-engineer")

CONFIG = """\
adapters:
  feishu:
    app_id: cli_shared
    app_secret_env: TEST_FEISHU_APP_SECRET
    verification_token: v-token-shared
    encrypt_key: key-shared
    bot_name: Staffroom
    domain: {url}
    dm_employee: pm
    users: {{ou_alice: alice}}
    employees:
      engineer:
        app_id: cli_engineer
        app_secret: secret-engineer
        verification_token: v-token-engineer
        encrypt_key: key-engineer
        bot_name: 研发工程师小E
    groups:
      oc_launch: {{scenario: team-chat}}
      oc_topics: {{scenario: team-chat, mode: thread}}
"""


@pytest.fixture
def feishu(tmp_path: Path, project: Path, fake: FakePlatform) -> Iterator[Served]:
    config = config_file(
        tmp_path, CONFIG.format(url=fake.url), {"TEST_FEISHU_APP_SECRET": "secret-shared"}
    )
    with serve(project, tmp_path / "data", config) as served:
        yield served


def encrypted(plain: dict[str, Any], key: str) -> dict[str, Any]:
    """``plain`` as Feishu encrypts it: AES-256-CBC, key sha256(encrypt_key), iv first."""
    data = json.dumps(plain).encode()
    pad = 16 - len(data) % 16
    iv = os.urandom(16)
    cipher = AES.new(hashlib.sha256(key.encode()).digest(), AES.MODE_CBC, iv)
    return {"encrypt": base64.b64encode(iv + cipher.encrypt(data + bytes([pad]) * pad)).decode()}


def signed(body: dict[str, Any], key: str | None) -> tuple[bytes, dict[str, str]]:
    """``body`` with X-Lark-Signature = sha256(timestamp + nonce + encrypt_key + body)."""
    raw = json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    if key is not None:
        stamp, nonce = str(int(time.time())), "a1b2c3d4"
        digest = hashlib.sha256((stamp + nonce + key).encode() + raw).hexdigest()
        headers |= {
            "x-lark-request-timestamp": stamp,
            "x-lark-request-nonce": nonce,
            "x-lark-signature": digest,
        }
    return raw, headers


def event(text: str, message_id: str, *, app: tuple[str, str] = SHARED, **fields: Any) -> dict:
    """An ``im.message.receive_v1`` event (payloads/feishu_message.json) from alice."""
    body = payload("feishu_message.json")
    body["header"] |= {"token": app[0], "event_id": f"ev-{message_id}-{app[0]}"}
    body["event"]["sender"]["sender_id"]["open_id"] = "ou_alice"
    body["event"]["message"] |= {
        "message_id": message_id,
        "chat_id": "oc_launch",
        "content": json.dumps({"text": text}),
        "mentions": [],
        **fields,
    }
    return body


def deliver(served: Served, plain: dict[str, Any], app: tuple[str, str] = SHARED) -> Any:
    """``plain`` as the app ``app`` sends it: encrypted and signed with its key."""
    response = served.post("/adapters/feishu/events", *signed(encrypted(plain, app[1]), app[1]))
    assert response.status_code == 200, response.text
    return response.json()


def text_of(call: Call) -> str:
    return str(json.loads(call.body["content"])["text"])


def test_challenges_and_what_feishu_did_not_send(feishu: Served) -> None:
    challenge = payload("feishu_url_verification.json")
    plain = challenge | {"token": SHARED[0]}
    response = feishu.post("/adapters/feishu/events", *signed(plain, None))
    assert response.json() == {"challenge": challenge["challenge"]}
    assert deliver(feishu, plain) == {"challenge": challenge["challenge"]}
    as_engineer = challenge | {"token": ENGINEER[0]}
    assert deliver(feishu, as_engineer, ENGINEER) == {"challenge": challenge["challenge"]}

    message = event("hello", "om_refused")
    cases = {
        "wrong token": signed(challenge | {"token": "not-ours"}, None),
        "unsigned": signed(encrypted(message, SHARED[1]), None),
        "bad signature": signed(encrypted(message, SHARED[1]), "not-the-key"),
        "unknown key": signed(encrypted(message, "not-the-key"), None),
        "odd token": signed(challenge | {"token": "é"}, None),
        "odd signature": (
            signed(encrypted(message, SHARED[1]), SHARED[1])[0],
            signed(encrypted(message, SHARED[1]), SHARED[1])[1] | {"x-lark-signature": b"\xe9"},
        ),
    }
    for name, (raw, headers) in cases.items():
        response = feishu.post("/adapters/feishu/events", raw, headers)
        assert response.status_code == 401, name
        assert response.json()["error"]["type"] == "unverified", name
    garbage = feishu.post("/adapters/feishu/events", b"[1, 2]", {"content-type": "text/plain"})
    assert garbage.status_code == 400 and garbage.json()["error"]["fix"]
    assert feishu.history("room:feishu-oc_launch") == []


def test_a_message_is_answered_once_however_often_it_comes(
    feishu: Served, fake: FakePlatform
) -> None:
    answer = deliver(feishu, event("hello team", "om_first"))
    assert answer["outcome"] == "posted" and answer["session"] == "room:feishu-oc_launch"
    [reply] = fake.wait_for("/im/v1/messages", 1)
    assert reply.query == {"receive_id_type": "chat_id"}
    assert reply.body["receive_id"] == "oc_launch" and reply.body["msg_type"] == "text"
    assert text_of(reply).startswith("[产品经理小P] [simulated]"), "shared app: name first"
    assert reply.token == "t-cli_shared"

    # Feishu's retry (a new event_id), and the same message seen by the engineer's app.
    assert deliver(feishu, event("hello team", "om_first"))["outcome"] == "duplicate"
    assert deliver(feishu, event("hello team", "om_first", app=ENGINEER), ENGINEER)["outcome"] == (
        "duplicate"
    )

    mention = {"key": "@_user_1", "id": {"open_id": "ou_seen_by_app"}, "name": "研发工程师小E"}
    asked = event("@_user_1 what is the risk?", "om_second", mentions=[mention])
    assert deliver(feishu, asked)["outcome"] == "posted"
    replies = fake.wait_for("/im/v1/messages", 2)
    assert replies[1].token == "t-cli_engineer", "the engineer answers as its own app"
    assert text_of(replies[1]).startswith("[simulated] 研发工程师小E")
    said = feishu.messages("room:feishu-oc_launch")
    assert said[0] == ("alice", "hello team")
    assert said[2] == ("alice", "@engineer what is the risk?")
    assert [a for a, _ in said] == ["alice", "pm", "alice", "engineer"]
    assert len(fake.sent("/im/v1/messages")) == 2, "nothing was sent twice"


def test_topics_are_rooms_answered_in_their_thread(feishu: Served, fake: FakePlatform) -> None:
    first = event("new topic", "om_root1", chat_id="oc_topics")
    key = deliver(feishu, first)["session"]
    assert key == "room:feishu-oc_topics-om_root1"
    follow = event("more on it", "om_reply1", chat_id="oc_topics", root_id="om_root1")
    assert deliver(feishu, follow)["session"] == key
    replies = fake.wait_for("/reply", 2)
    assert {r.path for r in replies} == {"/open-apis/im/v1/messages/om_root1/reply"}
    assert all(r.body["reply_in_thread"] is True for r in replies)


def test_p2p_chats_and_rich_posts(feishu: Served, fake: FakePlatform) -> None:
    post = {"title": "Plan", "content": [[{"tag": "text", "text": "launch on Friday?"}]]}
    dm = event("", "om_dm1", chat_id="oc_p2palice", chat_type="p2p")
    dm["event"]["message"] |= {"message_type": "post", "content": json.dumps(post)}
    assert deliver(feishu, dm)["session"] == "dm:alice@pm"
    [reply] = fake.wait_for("/im/v1/messages", 1)
    assert reply.body["receive_id"] == "oc_p2palice"
    assert feishu.messages("dm:alice@pm")[0] == ("alice", "Plan\nlaunch on Friday?")

    image = copy.deepcopy(dm)
    image["event"]["message"] |= {"message_id": "om_img", "message_type": "image"}
    assert deliver(feishu, image)["reason"] == "not a message event"
