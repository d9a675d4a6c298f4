"""A remark confirmed from a chat platform: the room's "remark 1, understood as: …" is sent to
the chat, and a person's "yes" replying to that message (a Slack thread reply, a Feishu reply)
confirms the remark, which then counts in the run's outcome. A "yes" replying to anything else
confirms nothing.

Through the real server and adapters, with a local fake of the platforms' APIs. The room's
first employee (pm, who reads remarks) thinks with the recording OpenAI stub
(tests/stub_openai.py), answering the remark reader's structured request with a reading; the
others are the offline simulator.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adapter_harness import Served, config_file, serve
from fake_platform import Call, FakePlatform, poll
from stub_openai import StubOpenAI
from test_feishu import deliver, event
from test_slack import message, send, slack_server

ORDER = json.dumps({"corrections": [{"kind": "order", "step": 3, "before": 2}]})
REMARK = "The review should come before the fix plan next time"
SOP = """\
---
id: desk
version: 1
scope: scenario:desk
goal: Answer a support ticket
status: published
steps:
  - speaker: pm
    do: Triage the ticket and name its owner
    waits_for_input: true
  - speaker: engineer
    do: Write the fix plan
    waits_for_input: true
  - speaker: designer
    do: Review the fix plan
  - speaker: pm
    do: Close the ticket
change_log:
  - version: 1
    why: first version
    by: admin
---
# Support desk
"""
SCENARIO = """\
id: desk
title: Support desk
participants: [pm, engineer, designer]
humans: [alice]
announcement:
  text: Answer the ticket.
  sop: "{{ best_sop('desk') }}"
settings:
  max_turns: 10
"""
PM = """\
id: pm
display_name: Pat
role: pm
persona: You are Pat, the team's lead. You are brief.
model: {{provider: openai, name: stub-model, base_url: "{url}", structured_output: json_schema}}
language: en
"""
SLACK = """\
    users: {U0ALICE: alice}
    groups:
      C0DESK: {scenario: desk}
"""
FEISHU = """\
adapters:
  feishu:
    app_id: cli_shared
    app_secret: secret-shared
    verification_token: v-token-shared
    encrypt_key: key-shared
    domain: {url}
    users: {{ou_alice: alice}}
    groups:
      oc_desk: {{scenario: desk}}
"""
ROOM = "room:slack-t0team1-c0desk"
FEISHU_ROOM = "room:feishu-oc_desk"
SENT = "/open-apis/im/v1/messages"


def reads_remarks(body: dict[str, Any]) -> dict[str, Any] | None:
    """The stub's answer by the request's kind: the remark reader's structured request (its
    response_format names the answer's schema) is answered with a reading."""
    schema = (body.get("response_format") or {}).get("json_schema") or {}
    return {"role": "assistant", "content": ORDER} if schema.get("name") == "RemarkAnswer" else None


@pytest.fixture
def desk_project(project: Path) -> Iterator[Path]:
    """The adapters' project plus the desk scenario and SOP; pm thinks with the stub."""
    (project / "scenarios" / "desk.yaml").write_text(SCENARIO, encoding="utf-8")
    (project / "sop_library" / "desk").mkdir(parents=True)
    (project / "sop_library" / "desk" / "v1.md").write_text(SOP, encoding="utf-8")
    with StubOpenAI(responder=reads_remarks, default_text="Noted.") as stub:
        (project / "agents" / "pm.yaml").write_text(PM.format(url=stub.base_url), "utf-8")
        yield project


@pytest.fixture
def slack(tmp_path: Path, desk_project: Path, fake: FakePlatform) -> Iterator[Served]:
    with slack_server(tmp_path, desk_project, fake, SLACK) as served:
        yield served


@pytest.fixture
def feishu(tmp_path: Path, desk_project: Path, fake: FakePlatform) -> Iterator[Served]:
    config = config_file(tmp_path, FEISHU.format(url=fake.url), {})
    with serve(desk_project, tmp_path / "data", config) as served:
        yield served


def said(calls: list[Call], words: str) -> Call:
    """The sent message whose text holds ``words``."""
    return next(c for c in calls if words in str(c.body.get("text") or c.body.get("content")))


def outcome(served: Served, key: str) -> dict[str, Any]:
    """The run's feedback event (its outcome), once the run has ended."""
    poll(lambda: any(e["kind"] == "feedback" for e in served.history(key)))
    return dict(next(e for e in served.history(key) if e["kind"] == "feedback")["content"])


def remarks(served: Served, key: str, status: str) -> list[dict[str, Any]]:
    history = served.history(key)
    return [e for e in history if e["kind"] == "remark" and e["content"]["status"] == status]


def desk(text: str, ts: str, **fields: Any) -> dict[str, Any]:
    """alice's message in the desk channel (a Slack ``message`` event)."""
    return message(text, ts, channel="C0DESK", **fields)


def remark_said_in_slack(slack: Served, fake: FakePlatform) -> Call:
    """Open the room with a ticket, say the remark at step 1's pause; the notice sent."""
    assert send(slack, desk("Ticket 4411: checkout returns 502", "1700000100.000100"))
    fake.wait_for("chat.postMessage", 1)  # step 1 answered; the room pauses
    send(slack, desk(REMARK, "1700000100.000200"))
    # The notice, then step 2's answer: sent in order, so the notice's id is recorded.
    calls = fake.wait_for("chat.postMessage", 3)
    notice = said(calls, "remark 1, understood as")
    assert notice.body["username"] == "Staffroom" and "reply to this" in notice.body["text"]
    return notice


def test_a_slack_thread_reply_to_the_remark_confirms_it(slack: Served, fake: FakePlatform) -> None:
    notice = remark_said_in_slack(slack, fake)
    assert notice.answer is not None
    reply = desk("yes", "1700000100.000300", thread_ts=notice.answer["ts"])
    assert send(slack, reply)["outcome"] in ("posted", "pending")

    assert outcome(slack, ROOM)["corrections"] == 1
    [understood] = remarks(slack, ROOM, "understood")
    [confirmed] = remarks(slack, ROOM, "confirmed")
    assert confirmed["content"]["understood"] == understood["id"]
    assert said(fake.sent("chat.postMessage"), "remark 1 confirmed")


def test_a_slack_thread_reply_to_an_employee_confirms_nothing(
    slack: Served, fake: FakePlatform
) -> None:
    remark_said_in_slack(slack, fake)
    step_one = fake.sent("chat.postMessage")[0]
    assert step_one.answer is not None and "username" in step_one.body
    reply = desk("yes", "1700000100.000300", thread_ts=step_one.answer["ts"])
    send(slack, reply)

    assert outcome(slack, ROOM)["corrections"] == 0
    history = slack.history(ROOM)
    [yes] = [e for e in history if e["kind"] == "message" and e["content"] == "yes"]
    pm = next(e for e in history if e["kind"] == "message" and e["author"] == "pm")
    assert yes["meta"]["reply_to"] == pm["id"], "a reply to pm's message, read as one"
    assert remarks(slack, ROOM, "confirmed") == []


def test_a_feishu_reply_to_the_remark_confirms_it(feishu: Served, fake: FakePlatform) -> None:
    def alice(text: str, mid: str, **fields: Any) -> None:
        answer = deliver(feishu, event(text, mid, chat_id="oc_desk", **fields))
        assert answer["outcome"] in ("posted", "pending"), answer

    # A reply to a message the room never had is an ordinary message (not refused).
    alice("Ticket 4411: checkout returns 502", "om_t1", parent_id="om_elsewhere")
    fake.wait_for(SENT, 1)
    assert "reply_to" not in feishu.history(FEISHU_ROOM)[0]["meta"]
    alice(REMARK, "om_t2")
    notice = said(fake.wait_for(SENT, 3), "remark 1, understood as")
    assert json.loads(notice.body["content"])["text"].startswith("[Staffroom] remark 1")
    assert notice.answer is not None

    sent_id = notice.answer["data"]["message_id"]
    alice("yes", "om_t3", parent_id=sent_id, root_id=sent_id)
    assert outcome(feishu, FEISHU_ROOM)["corrections"] == 1
    [understood] = remarks(feishu, FEISHU_ROOM, "understood")
    [confirmed] = remarks(feishu, FEISHU_ROOM, "confirmed")
    assert confirmed["content"]["understood"] == understood["id"]
