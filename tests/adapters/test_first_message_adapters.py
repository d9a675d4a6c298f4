"""A chat message that opens a room is the room's first message: the room enters with it and
its first SOP step works on it (before, the room entered on its own and step 1 ran on nothing,
the message arriving after it). Slack through the real server; the simulator answers."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from adapter_harness import ROOT, Served
from fake_platform import FakePlatform
from test_slack import message, send, slack_server

CONFIG = """\
    users: {U0ALICE: author}
    groups:
      C0LAUNCH: {scenario: tech-article, mode: thread}
"""
TICKET = "Ticket #4411 from Acme Corp - checkout API returns HTTP 502."


@pytest.fixture
def slack(tmp_path: Path, project: Path, fake: FakePlatform) -> Iterator[Served]:
    shutil.copy(ROOT / "scenarios" / "tech_article.yaml", project / "scenarios")
    shutil.copytree(ROOT / "sop_library", project / "sop_library")
    with slack_server(tmp_path, project, fake, CONFIG) as served:
        yield served


def test_the_message_that_opens_a_room_is_what_step_1_works_on(
    slack: Served, fake: FakePlatform
) -> None:
    key = send(slack, message(TICKET, "1700000002.000100"))["session"]
    fake.wait_for("chat.postMessage", 2)  # steps 1 and 2 answered in the thread
    events = slack.history(key)
    kinds = [e["kind"] for e in events]
    assert events[0]["kind"] == "message" and events[0]["content"] == TICKET
    assert events[0]["meta"]["opening"] is True
    assert kinds.count("plan") == 1 and kinds.index("plan") < kinds.index("sop_step")
    humans = [e for e in events if e["kind"] == "message" and e["meta"].get("human")]
    assert len(humans) == 1, "the message was posted once, not after a bare entry"
