"""The chat-platform callbacks of a real `staffroom serve` against malformed and hostile input
(issue 20): every refusal is a 400 or 401 in the JSON error shape and keeps the connection
open, nothing in the server log is a traceback, and one platform message never becomes more
than a posted message may hold.

Both adapters are configured, their APIs answered by the local fake platform (replies to the
messages that are posted go there). One server for the module: starting one takes seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fake_platform import FakePlatform
from serve_process import ServeProcess, wait_until
from server_harness import ADMIN, CONFIG, configured_server

from framework.surfaces.server.limits import MESSAGE_CHARS

SLACK_SECRET = "slack-signing-secret-0123456789"
FEISHU_TOKEN = "feishu-verification-token"
FEISHU_KEY = "feishu-encrypt-key"

ADAPTERS = f"""\
adapters:
  slack:
    signing_secret: {SLACK_SECRET}
    bot_token: xoxb-test
    api_url: {{url}}/api/
    groups:
      C0LAUNCH: {{{{scenario: tech-article}}}}
  feishu:
    app_id: cli_test
    app_secret: feishu-app-secret
    verification_token: {FEISHU_TOKEN}
    encrypt_key: {FEISHU_KEY}
    max_clock_skew: 300
    domain: {{url}}
    users: {{{{ou_alice: alice}}}}
    dm_employee: pm
    groups:
      "*": {{{{scenario: tech-article}}}}
"""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakePlatform]:
    with FakePlatform() as platform:
        yield platform


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, fake: FakePlatform) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("callbacks")
    with configured_server(folder, CONFIG + ADAPTERS.format(url=fake.url)) as started:
        yield started


def slack_signed(body: bytes, *, secret: str = SLACK_SECRET) -> dict[str, str]:
    """Slack's headers for ``body``: v0 HMAC-SHA256 of ``v0:{timestamp}:{body}``."""
    stamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    return {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={digest.hexdigest()}"}


def feishu_signed(body: bytes) -> dict[str, str]:
    """Feishu's headers for ``body``: sha256(timestamp + nonce + encrypt_key + body)."""
    stamp, nonce = str(int(time.time())), "n0nce"
    digest = hashlib.sha256((stamp + nonce + FEISHU_KEY).encode() + body).hexdigest()
    return {
        "x-lark-request-timestamp": stamp,
        "x-lark-request-nonce": nonce,
        "x-lark-signature": digest,
    }


def feishu_message(message_id: str, message_type: str, content: Any, **fields: Any) -> bytes:
    """A schema 2.0 ``im.message.receive_v1`` event from alice (in oc_launch by default)."""
    event = {
        "schema": "2.0",
        "header": {"event_type": "im.message.receive_v1", "token": FEISHU_TOKEN},
        "event": {
            "sender": {"sender_id": {"open_id": "ou_alice"}, "sender_type": "user"},
            "message": {
                "message_id": message_id,
                "chat_id": "oc_launch",
                "chat_type": "group",
                "message_type": message_type,
                "content": json.dumps(content, ensure_ascii=False),
                **fields,
            },
        },
    }
    return json.dumps(event, ensure_ascii=False).encode()


def local_port(response: httpx.Response) -> int:
    """The client's port of the connection ``response`` came on."""
    port: int = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    return port


def refused(
    server: ServeProcess, path: str, body: bytes, headers: dict[str, str]
) -> dict[str, Any]:
    """Post ``body``, then ask /api/health on the same client: the refusal is a 400 or 401 in
    the JSON error shape, and the second request goes over the same connection."""
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post(path, content=body, headers=headers)
        first = local_port(answer)
        health = client.get("/api/health")
        assert health.status_code == 200
        assert local_port(health) == first, "the connection was dropped"
    assert answer.status_code in (400, 401), (answer.status_code, answer.text[:300])
    error = answer.json()["error"]
    assert set(error) == {"type", "message", "field", "fix"} and error["message"] and error["fix"]
    return {"status": answer.status_code, **error}


def said_by_alice(server: ServeProcess, chat: str) -> str:
    """What alice said in the Feishu chat ``chat``'s room, read over the API (once the room
    has stored it)."""
    url = f"{server.url}/api/sessions/room:feishu-{chat}/history?limit=1000"

    def find() -> str | None:
        answer = httpx.get(url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
        if answer.status_code == 404:  # the room is still being opened
            return None
        assert answer.status_code == 200, answer.text
        events = answer.json()["events"]
        said = [e["content"] for e in events if e["kind"] == "message" and e["author"] == "alice"]
        return said[0] if said else None

    found: str = wait_until(find, f"alice's message in {chat}", seconds=60)
    return found


def test_malformed_feishu_bodies_are_refused_without_a_credential(
    server: ServeProcess,
) -> None:
    cases = {
        "header a string": b'{"header":"x"}',
        "header a list": b'{"header":[1]}',
        "token a number": b'{"header":{"token":5}}',
        "event_type a list": b'{"header":{"event_type":[]}}',
        "100,000 levels deep": b"[" * 100_000 + b"]" * 100_000,
        "not JSON": b"\xff\xfe{",
    }
    for name, body in cases.items():
        error = refused(server, "/adapters/feishu/events", body, {})
        assert error["status"] == 400 and error["type"] == "bad_input", name
    wrong = refused(server, "/adapters/feishu/events", b'{"header":{"token":"guess"}}', {})
    assert wrong["status"] == 401 and wrong["field"] == "token"
    stamp = {"x-lark-signature": "0" * 64, "x-lark-request-timestamp": "1" * 5000}
    assert refused(server, "/adapters/feishu/events", b"{}", stamp)["status"] == 401
    assert "Traceback" not in server.log()


def test_a_signed_feishu_post_of_the_wrong_shape_is_400(server: ServeProcess) -> None:
    body = feishu_message("om_bad_post", "post", {"title": "Plan", "content": 5})
    error = refused(server, "/adapters/feishu/events", body, feishu_signed(body))
    assert error["status"] == 400 and error["field"] == "event.message.content.content"
    body = feishu_message("om_bad_text", "text", {"text": ["not", "words"]})
    error = refused(server, "/adapters/feishu/events", body, feishu_signed(body))
    assert error["status"] == 400 and error["field"] == "event.message.content.text"
    assert "Traceback" not in server.log()


def test_a_slack_body_that_is_not_utf8_is_checked_then_refused(server: ServeProcess) -> None:
    body = b'{"type": "event_callback", "text": "\xff\xfe"}'
    wrong = refused(server, "/adapters/slack/events", body, slack_signed(body, secret="guess"))
    assert wrong["status"] == 401 and wrong["field"] == "X-Slack-Signature"
    signed = refused(server, "/adapters/slack/events", body, slack_signed(body))
    assert signed["status"] == 400 and "JSON" in signed["message"]
    stamp = {"x-slack-request-timestamp": "1" * 5000, "x-slack-signature": "v0=00"}
    assert refused(server, "/adapters/slack/events", b"{}", stamp)["status"] == 401
    assert "Traceback" not in server.log()


def test_a_mention_with_an_empty_key_does_not_multiply_the_text(
    server: ServeProcess, fake: FakePlatform
) -> None:
    words = "@_user_1 please review the launch plan before Friday. " * 16  # 880 characters
    mentions = [
        {"key": "", "id": {"open_id": "ou_nobody"}, "name": "everyone"},
        {"key": "@_user_1", "id": {"open_id": "ou_alice"}, "name": "Alice"},
    ]
    body = feishu_message(
        "om_empty_key", "text", {"text": words}, mentions=mentions, chat_id="oc_empty_key"
    )
    assert len(body) < 1400
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post("/adapters/feishu/events", content=body, headers=feishu_signed(body))
    assert answer.status_code == 200 and answer.json()["outcome"] in ("posted", "pending")
    stored = said_by_alice(server, "oc_empty_key")
    assert stored == words.replace("@_user_1", "@alice").strip()


def test_a_message_that_expands_past_the_cap_is_cut_with_a_note(server: ServeProcess) -> None:
    name = "a-rather-long-display-name-" * 4  # 108 characters for an 8-character placeholder
    mentions = [{"key": "@_user_1", "id": {"open_id": "ou_long"}, "name": name}]
    words = "@_user_1 " * 2000  # 18 kB of text; 218,000 characters once expanded
    body = feishu_message(
        "om_expands", "text", {"text": words}, mentions=mentions, chat_id="oc_expands"
    )
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post("/adapters/feishu/events", content=body, headers=feishu_signed(body))
    assert answer.status_code == 200 and answer.json()["outcome"] in ("posted", "pending")
    cut = said_by_alice(server, "oc_expands")
    assert len(cut) <= MESSAGE_CHARS
    assert cut.startswith(f"@{name} @{name}")
    assert cut.endswith(f"the message was longer than {MESSAGE_CHARS:,} characters]")


def test_a_dm_from_an_id_no_session_can_hold_is_answered_and_not_retried(
    server: ServeProcess,
) -> None:
    """Signed by Feishu, so a 4xx would only make Feishu send it again, forever: the answer
    is 200 ``invalid`` with the reason, like every message a room refuses."""
    event = json.loads(feishu_message("om_long_sender", "text", {"text": "hi"}, chat_type="p2p"))
    event["event"]["sender"]["sender_id"]["open_id"] = "ou_" + "x" * 50_000
    body = json.dumps(event).encode()
    with httpx.Client(base_url=server.url, timeout=30) as client:
        answer = client.post("/adapters/feishu/events", content=body, headers=feishu_signed(body))
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["outcome"] == "invalid" and "chat id" in answer.json()["reason"]
    assert "Traceback" not in server.log()
