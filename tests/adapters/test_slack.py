"""Slack through the real server: signed Events API requests in, chat.postMessage out to a
local fake of Slack's Web API (no network). Employees use the simulator (a test double)."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from adapter_harness import Served, config_file, payload, serve
from fake_platform import FakePlatform

SHARED_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
ENGINEER_SECRET = "e3c1a9d0b7f24c6a8e5d2f1b0c9a8d7e"
TEAM_ROOM = "room:slack-t0team1-c0launch"

SLACK_APP = """\
  slack:
    signing_secret_env: TEST_SLACK_SIGNING_SECRET
    bot_token: xoxb-shared
    app_id: A0SHARED
    bot_id: B0SHARED
    bot_user_id: U0SHAREDBOT
    api_url: {url}/api/
"""
"""The shared Slack app's section of server.yaml, before its own settings (``{url}``: the
fake Slack's); its requests are signed with ``SHARED_SECRET``."""
CONFIG = f"""\
    dm_employee: pm
    users: {{U0ALICE: alice, U0BOB: bob, B0RIVAL: rival}}
    employees:
      pm: {{icon_emoji: ":memo:"}}
      engineer:
        user_id: U0ENG
        bot_token: xoxb-engineer
        signing_secret: {ENGINEER_SECRET}
        app_id: A0ENG
        bot_id: B0ENG
    groups:
      C0LAUNCH: {{scenario: team-chat}}
      C0THREADS: {{scenario: team-chat, mode: thread}}
"""


@contextmanager
def slack_server(
    tmp_path: Path, project: Path, fake: FakePlatform, settings: str, *, head: str = ""
) -> Iterator[Served]:
    """The server over ``project`` with the shared Slack app and its ``settings`` (users,
    groups, ...), talking to ``fake``; ``head``: server.yaml's own sections before it."""
    text = f"{head}adapters:\n{SLACK_APP.format(url=fake.url)}{settings}"
    config = config_file(tmp_path, text, {"TEST_SLACK_SIGNING_SECRET": SHARED_SECRET})
    with serve(project, tmp_path / "data", config) as served:
        yield served


@pytest.fixture
def slack(tmp_path: Path, project: Path, fake: FakePlatform) -> Iterator[Served]:
    head = "heartbeat: 15        # the server's own sections are left to it\n"
    with slack_server(tmp_path, project, fake, CONFIG, head=head) as served:
        yield served


def signed(
    body: dict[str, Any], *, secret: str = SHARED_SECRET, at: float | None = None, retry: int = 0
) -> tuple[bytes, dict[str, str]]:
    """``body`` as Slack sends it: v0 signature over ``v0:{timestamp}:{body}``."""
    raw = json.dumps(body).encode()
    stamp = str(int(time.time() if at is None else at))
    digest = hmac.new(secret.encode(), f"v0:{stamp}:".encode() + raw, hashlib.sha256).hexdigest()
    headers = {
        "content-type": "application/json",
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": f"v0={digest}",
    }
    if retry:
        headers |= {"x-slack-retry-num": str(retry), "x-slack-retry-reason": "http_timeout"}
    return raw, headers


def message(text: str, ts: str, **fields: Any) -> dict[str, Any]:
    """A ``message`` event (payloads/slack_message.json) with ``text``, ``ts`` and fields."""
    body = payload("slack_message.json")
    body["event"] |= {"text": text, "ts": ts, "event_ts": ts, **fields}
    body["event_id"] = f"Ev{ts.replace('.', '')}"
    return body


def send(served: Served, body: dict[str, Any], **how: Any) -> dict[str, Any]:
    response = served.post("/adapters/slack/events", *signed(body, **how))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert isinstance(answer, dict)
    return answer


def test_only_requests_slack_signed_get_in(slack: Served) -> None:
    challenge = payload("slack_url_verification.json")
    answer = send(slack, challenge)
    assert answer == {"challenge": challenge["challenge"]}

    body = message("hello", "1700000000.000001")
    raw, headers = signed(body)
    for name, bad in [
        ("unsigned", {"content-type": "application/json"}),
        ("wrong secret", signed(body, secret="not-the-secret-at-all-0000")[1]),
        ("stale", signed(body, at=time.time() - 600)[1]),
        ("tampered", headers),
        # Not ASCII: str comparisons and int() would raise (a 500), an attacker's choice.
        ("odd timestamp", headers | {"x-slack-request-timestamp": b"\xb2"}),
        ("odd signature", headers | {"x-slack-signature": b"v0=\xe9"}),
    ]:
        sent = raw.replace(b"hello", b"hellO") if name == "tampered" else raw
        response = slack.post("/adapters/slack/events", sent, bad)
        assert response.status_code == 401, name
        error = response.json()["error"]
        assert error["type"] == "unverified" and error["fix"], name
    assert "5 minutes" in slack.post("/adapters/slack/events", *signed(body, at=1)).text
    huge = slack.post("/adapters/slack/events", b"x" * 1_000_001, headers)
    assert huge.status_code == 413 and huge.json()["error"]["type"] == "too_large"
    assert slack.history(TEAM_ROOM) == [], "nothing unsigned reached a room"

    # The engineer's own app signs with its own secret: accepted too.
    assert send(slack, body, secret=ENGINEER_SECRET)["outcome"] in ("posted", "pending")


def test_two_employees_answer_as_themselves_and_redelivery_changes_nothing(
    slack: Served, fake: FakePlatform
) -> None:
    first = message("@pm can you plan the launch?", "1700000000.000100")
    assert send(slack, first) == {
        "ok": True,
        "outcome": "posted",
        "session": TEAM_ROOM,
        "reason": None,
    }
    [reply] = fake.wait_for("chat.postMessage", 1)
    assert reply.token == "xoxb-shared", "pm has no app of its own: the shared bot speaks"
    assert reply.body["username"] == "产品经理小P" and reply.body["icon_emoji"] == ":memo:"
    assert reply.body["channel"] == "C0LAUNCH" and "thread_ts" not in reply.body
    assert reply.body["text"].startswith("[simulated] 产品经理小P")

    # Slack's retry of the event, then the same message as an app_mention: one message.
    assert send(slack, first, retry=1)["outcome"] == "duplicate"
    mention = payload("slack_app_mention.json")
    mention["event"] |= {"ts": "1700000000.000100", "text": "<@U0SHAREDBOT> @pm again?"}
    assert send(slack, mention)["outcome"] == "duplicate"

    second = message("<@U0ENG> what is the risk?", "1700000000.000200")
    assert send(slack, second)["outcome"] == "posted"
    replies = fake.wait_for("chat.postMessage", 2)
    assert replies[1].token == "xoxb-engineer", "the engineer speaks through its own app"
    assert "username" not in replies[1].body
    assert replies[1].body["text"].startswith("[simulated] 研发工程师小E")

    said = slack.messages(TEAM_ROOM)
    assert [author for author, _ in said] == ["alice", "pm", "alice", "engineer"]
    assert said[2][1] == "@engineer what is the risk?", "the mention reached the room by id"
    assert len(fake.sent("chat.postMessage")) == 2, "the redeliveries sent nothing"

    # Our own replies come back as events: echoes, never posted again.
    for echo in (
        message(reply.body["text"], "1800000000.000001", bot_id="B0SHARED", app_id="A0SHARED"),
        message("echo", "1700000000.000300", user="U0ENG", bot_id="B0ENG"),
    ):
        assert send(slack, echo)["outcome"] == "ignored"
    assert len(slack.messages(TEAM_ROOM)) == 4


def test_a_thread_is_a_room_and_replies_stay_in_it(slack: Served, fake: FakePlatform) -> None:
    root = "1700000001.000100"
    body = message("@pm start here", root, channel="C0THREADS")
    key = send(slack, body)["session"]
    assert key == f"room:slack-t0team1-c0threads-{root}"
    inside = message("@engineer and you?", "1700000001.000200", channel="C0THREADS")
    inside["event"]["thread_ts"] = root
    assert send(slack, inside)["session"] == key
    other = message("@pm another topic", "1700000001.000300", channel="C0THREADS")
    assert send(slack, other)["session"] != key
    replies = fake.wait_for("chat.postMessage", 3)
    threads = sorted(r.body["thread_ts"] for r in replies)
    assert threads == [root, root, "1700000001.000300"]


def test_a_loop_with_another_bot_stops_at_the_turn_budget(
    slack: Served, fake: FakePlatform
) -> None:
    def rival(n: int) -> dict[str, Any]:
        body = payload("slack_bot_message.json")
        body["event"] |= {"text": f"@pm ping {n}", "ts": f"1700000002.{n:06d}"}
        return body

    for n in range(3):  # max_turns is 3 in the scenario
        assert send(slack, rival(n))["outcome"] == "posted"
        fake.wait_for("chat.postMessage", n + 1)
    stopped = send(slack, rival(3))
    assert stopped["outcome"] == "ignored" and "max_turns" in stopped["reason"]
    authors = [author for author, _ in slack.messages(TEAM_ROOM)]
    assert authors == ["rival", "pm"] * 3, "another bot's messages reach the room as its own"

    # A person speaks: the budget starts again.
    assert send(slack, message("@pm hi", "1700000002.000100"))["outcome"] == "posted"
    fake.wait_for("chat.postMessage", 4)
    assert send(slack, rival(4))["outcome"] == "posted"
    fake.wait_for("chat.postMessage", 5)


def test_direct_messages_go_to_the_answering_employee(slack: Served, fake: FakePlatform) -> None:
    dm = message("hi pm", "1700000003.000100", channel="D0ALICE", channel_type="im")
    assert send(slack, dm)["session"] == "dm:alice@pm"
    to_engineer = copy.deepcopy(dm)
    to_engineer["api_app_id"] = "A0ENG"
    to_engineer["event"] |= {"ts": "1700000003.000200", "channel": "D0ENGALICE"}
    assert send(slack, to_engineer, secret=ENGINEER_SECRET)["session"] == "dm:alice@engineer"
    replies = fake.wait_for("chat.postMessage", 2)
    by_channel = {r.body["channel"]: r for r in replies}
    assert by_channel["D0ALICE"].token == "xoxb-shared"
    assert by_channel["D0ENGALICE"].token == "xoxb-engineer"


def test_what_is_not_ours_to_answer_is_ignored(slack: Served, fake: FakePlatform) -> None:
    unmapped = message("hello", "1700000004.000100", channel="C0ELSEWHERE")
    assert send(slack, unmapped) == {
        "ok": True,
        "outcome": "ignored",
        "session": None,
        "reason": "group not mapped",
    }
    edited = message("edited", "1700000004.000200", subtype="message_changed")
    assert send(slack, edited)["reason"] == "not a message event"
    assert fake.sent("chat.postMessage") == []
