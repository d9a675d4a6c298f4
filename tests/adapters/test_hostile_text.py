"""What one signed platform message may become in a room (issue 20): mentions are resolved in
one pass, so no name can multiply the text, the result is at most ``MAX_TEXT`` characters (the
rest cut, with a note saying so), and reading it takes time linear in its length.

The parsers directly, with bodies signed as the platforms sign them; the same limits over HTTP
are in tests/server/test_adapter_callbacks.py.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any

from framework.surfaces.adapters.base import CUT_NOTE, MAX_TEXT, Inbound
from framework.surfaces.adapters.feishu import FeishuAdapter, FeishuDoc
from framework.surfaces.adapters.slack import SlackAdapter, SlackDoc

SECRET, TOKEN = "slack-secret", "feishu-token"
SLACK = SlackAdapter(SlackDoc(signing_secret=SECRET, bot_token="xoxb-test"))
FEISHU = FeishuAdapter(FeishuDoc(app_id="cli_x", app_secret="s", verification_token=TOKEN))


def slack_read(text: str) -> Inbound:
    event = {"type": "message", "channel": "C0", "ts": "1.2", "text": text}
    raw = json.dumps({"type": "event_callback", "team_id": "T0", "event": event}).encode()
    stamp = str(int(time.time()))
    digest = hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + raw, hashlib.sha256).hexdigest()
    found = SLACK.read(
        {"x-slack-request-timestamp": stamp, "x-slack-signature": f"v0={digest}"}, raw
    )
    assert isinstance(found, Inbound)
    return found


def feishu_read(text: str, mentions: list[dict[str, Any]]) -> Inbound:
    message = {"message_id": "om_1", "chat_id": "oc_1", "message_type": "text"}
    message |= {"content": json.dumps({"text": text}), "mentions": mentions}
    event = {"header": {"event_type": "im.message.receive_v1", "token": TOKEN}}
    event |= {"event": {"sender": {"sender_id": {"open_id": "ou_a"}}, "message": message}}
    found = FEISHU.read({}, json.dumps(event).encode())
    assert isinstance(found, Inbound)
    return found


def test_a_feishu_name_holding_another_key_is_not_expanded_again() -> None:
    # Replaced one after another, @_user_1's name would gain @_user_2's name twice, which
    # would gain... (the "each mention multiplies by 4").
    mentions = [
        {"key": "@_user_1", "name": "@_user_2 @_user_2 @_user_2 @_user_2"},
        {"key": "@_user_2", "name": "@_user_1 @_user_1 @_user_1 @_user_1"},
    ]
    found = feishu_read("hi @_user_1 and @_user_2", mentions)
    assert (
        found.text
        == "hi @@_user_2 @_user_2 @_user_2 @_user_2 and @@_user_1 @_user_1 @_user_1 @_user_1"
    )


def test_a_slack_message_over_the_cap_is_cut_with_a_note() -> None:
    found = slack_read("x" * (MAX_TEXT + 5000))
    note = CUT_NOTE.format(limit=MAX_TEXT)
    assert len(found.text) == MAX_TEXT and found.text.endswith(note)
    assert found.text.startswith("x" * (MAX_TEXT - len(note)))
    assert slack_read("y" * MAX_TEXT).text == "y" * MAX_TEXT, "a message at the cap is whole"


def test_unclosed_slack_mentions_are_read_in_linear_time() -> None:
    # `<@` 20,000 times: the mention pattern used to scan from each `<` to the end of the
    # text (13 s here), holding the server's event loop; now each scan stops at the next `<`.
    started = time.monotonic()
    found = slack_read("<@" * 20_000)
    assert time.monotonic() - started < 2.0
    assert found.text == "<@" * 20_000
