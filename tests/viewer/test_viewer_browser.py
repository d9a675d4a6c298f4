"""The room viewer in a real headless Chromium against the real server (offline simulator).

Rooms: enter the token, open a room, post as its person, see the replies arrive live; reload,
and after a server crash, and see the transcript resume with every event exactly once, in
the log's order. Managers: edit an SOP as a new version, see its diff, be refused publishing
it before its reviewer approved, approve it, publish it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, Request, expect
from serve_process import ServeProcess
from viewer_harness import CHROMIUM, MANAGER, viewer_server

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).is_file(), reason="needs Debian's chromium (.ci/run installs it)"
)


def log_ids(server: ServeProcess, key: str) -> list[str]:
    path = server.data / "sessions" / f"{key}.jsonl"
    return [json.loads(line)["id"] for line in path.read_text("utf-8").splitlines() if line]


def shown_ids(page: Page) -> list[str]:
    return page.locator("#transcript > li").evaluate_all("els => els.map(e => e.dataset.eventId)")


def expect_whole_log(page: Page, server: ServeProcess, key: str) -> list[str]:
    """The transcript shows the log's events in its order, each once (the log may grow)."""
    logged = log_ids(server, key)
    expect(page.locator(f'#transcript > li[data-event-id="{logged[-1]}"]')).to_have_count(1)
    shown = shown_ids(page)
    assert len(shown) == len(set(shown)), "an event is shown twice"
    assert shown[: len(logged)] == logged
    assert set(shown) <= set(log_ids(server, key))
    return shown


def sign_in(page: Page, server: ServeProcess, token: str = MANAGER) -> None:
    page.goto(server.url + "/")
    expect(page.locator("#token-form")).to_be_visible()
    page.fill("#token-input", token)
    page.click("#token-form button[type=submit]")


def test_a_room_runs_live_and_resumes_without_duplicates(page: Page, server: ServeProcess) -> None:
    key = "room:launch-42"
    sign_in(page, server)
    expect(page.locator("#token-form")).to_be_hidden()
    page.fill("#open-id", "launch-42")
    page.select_option("#open-scenario", "tech-article")
    page.click("#open-form button[type=submit]")
    expect(page.locator(f'#sessions li[data-session="{key}"]')).to_have_count(1)
    expect(page.locator("#room-title")).to_have_text(key)
    # The room enters by itself and stops where the SOP asks its person.
    expect(page.locator('#transcript li[data-kind="wait"]')).to_have_count(1)
    expect(page.locator("#sop-ref")).to_have_text("tech-article@1")
    expect(page.locator("#sop-changes li")).to_have_count(1)
    expect(page.locator("#room-status")).to_contain_text("waiting for author")
    expect(page.locator('#transcript li[data-kind="message"] .why').first).to_have_text("step 1")
    expect(page.locator("#post-author option")).to_have_text(["author"])

    # Room text is untrusted: markup in a message is shown as text and never runs.
    hostile = '方向没问题 <img src=x onerror="window.__xss=1">'
    page.fill("#post-text", hostile)
    page.click("#post-send")
    expect(page.locator('#transcript li[data-kind="outcome"]')).to_have_count(1)
    said = re.compile(f"^{re.escape(hostile)}$")
    expect(page.locator("#transcript li.message .text", has_text=said)).to_have_count(1)
    assert page.evaluate("window.__xss") is None
    assert page.locator("#transcript img").count() == 0
    expect(page.locator("#outcome")).to_be_visible()
    expect(page.locator("#outcome-facts")).to_contain_text("all steps done")
    expect(page.locator("#outcome-facts")).to_contain_text("tech-article@1 runs")
    expect(
        page.locator('#transcript li[data-kind="message"] .who', has_text="设计师小D")
    ).to_have_count(1)
    expect_whole_log(page, server, key)

    # A reload replays the session from the log: the same entries, once each.
    page.reload()
    expect(page.locator("#token-form")).to_be_hidden()
    expect_whole_log(page, server, key)

    # The server dies; the page reconnects with the last id it saw and gets only what follows.
    stream_requests: list[Request] = []
    page.on("request", lambda r: stream_requests.append(r) if "/events" in r.url else None)
    last_before = shown_ids(page)[-1]
    server.restart()
    expect(page.locator("#stream-state")).to_have_text("live")
    with server.client(MANAGER) as client:
        posted = client.post(
            f"/api/sessions/{key}/messages", json={"text": "还有一件事", "author": "author"}
        )
    assert posted.status_code == 200, posted.text
    reply_id = posted.json()["events"][-1]["id"]
    expect(page.locator(f'#transcript li[data-event-id="{reply_id}"]')).to_have_count(1)
    expect_whole_log(page, server, key)
    resumed = [r.headers.get("last-event-id") for r in stream_requests]
    assert last_before in resumed


def test_a_wrong_token_is_asked_again(page: Page, server: ServeProcess) -> None:
    sign_in(page, server, token="not-a-token-of-this-server")
    expect(page.locator("#notice")).to_contain_text("unknown bearer token")
    expect(page.locator("#notice .fix")).to_contain_text("Authorization: Bearer")
    expect(page.locator("#token-form")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('staffroom.token')") is None
    # The right one then works without reloading.
    sign_in(page, server)
    expect(page.locator("#token-form")).to_be_hidden()
    expect(page.locator("#notice")).to_be_hidden()


def test_a_server_without_auth_needs_no_token(page: Page, tmp_path: Path) -> None:
    with viewer_server(tmp_path, no_auth=True) as local:  # `--no-auth`: 127.0.0.1 only
        page.goto(local.url + "/")
        expect(page.locator("#open-scenario option[value=tech-article]")).to_have_count(1)
        expect(page.locator("#token-form")).to_be_hidden()
        expect(page.locator("#forget-token")).to_be_hidden()
        page.click("#tab-sops")
        expect(page.locator('article[data-ref="tech-article@1"]')).to_have_count(1)


def test_managers_edit_review_and_publish_a_version(page: Page, server: ServeProcess) -> None:
    sign_in(page, server)
    expect(page.locator("#token-form")).to_be_hidden()
    page.click("#tab-sops")
    v1 = page.locator('article[data-ref="tech-article@1"]')
    expect(v1.locator(".status")).to_have_text("published · best")

    # Edit as a new version: the card text, a change note, who must review it.
    v1.locator(".edit").click()
    card = v1.locator(".card")
    expect(card).to_have_value(re.compile(r"^---\nid: tech-article\n"))
    card.fill(card.input_value().replace("合规自检与定稿：", "合规自检、事实核查与定稿："))
    v1.locator(".note").fill("add a fact check to the last step")
    v1.locator(".author").fill("alice")
    v1.locator(".reviewers").fill("bob")
    v1.locator(".save").click()

    v2 = page.locator('article[data-ref="tech-article@2"]')
    expect(v2.locator(".status")).to_have_text("draft")
    expect(v2.locator(".diff")).to_contain_text("against tech-article@1")
    expect(v2.locator(".diff .diff-add", has_text="4. pm: 合规自检、事实核查与定稿")).to_have_count(
        1
    )
    expect(v2.locator(".diff .diff-del", has_text="4. pm: 合规自检与定稿")).to_have_count(1)
    expect(v2.locator(".review")).to_have_text("reviewers: bob · awaiting approval from bob")

    # Publishing before the reviewer approved is refused, and the page says who must approve.
    v2.locator(".publish").click()
    expect(v2.locator(".error")).to_contain_text("needs approval from: bob")
    expect(v2.locator(".error .fix")).to_contain_text("--by bob")

    # Someone else's approval does not count for bob's.
    v2.locator(".reviewer").fill("carol")
    v2.locator(".approve").click()
    expect(page.locator('article[data-ref="tech-article@2"] .review')).to_contain_text(
        "approved by carol"
    )
    v2.locator(".publish").click()
    expect(v2.locator(".error")).to_contain_text("needs approval from: bob")

    v2.locator(".reviewer").fill("bob")
    v2.locator(".approve").click()
    expect(v2.locator(".review")).to_contain_text("approved by carol, bob")
    v2.locator(".publish").click()
    expect(v2.locator(".status")).to_have_text("published")
    expect(page.locator('section[data-sop="tech-article"] h3')).to_contain_text("trial: v2")

    # Retire it: it still says why it was made, and now why it was retired.
    v2.locator(".reason").fill("the fact check belongs to the engineer")
    v2.locator(".deprecate").click()
    expect(v2.locator(".status")).to_have_text("deprecated")
    expect(v2.locator(".why")).to_have_text("add a fact check to the last step")
    expect(v2.locator(".retired")).to_have_text(
        "Deprecated: the fact check belongs to the engineer"
    )


def test_the_stream_parser_reads_events_split_anywhere(page: Page, server: ServeProcess) -> None:
    page.goto(server.url + "/")
    parsed = page.evaluate(
        """async () => {
            const { parseSse } = await import("/viewer/sse.js");
            const text = ": ping\\r\\n\\r\\nid: e1\\r\\nevent: message\\r\\ndata: {\\"a\\":\\r\\n"
                + "data: 1}\\r\\n\\r\\nretry: 500\\n\\nid: e2\\ndata: x\\n\\nid: e3\\nda";
            const out = [];
            let buffer = "";
            for (const ch of text) {  // one character at a time: blocks split anywhere
                const got = parseSse(buffer + ch);
                buffer = got.rest;
                out.push(...got.events);
            }
            return { out, rest: buffer };
        }"""
    )
    assert parsed["out"] == [
        {"id": "e1", "event": "message", "data": '{"a":\n1}', "retry": None},
        {"id": None, "event": "message", "data": "", "retry": 500},
        {"id": "e2", "event": "message", "data": "x", "retry": None},
    ]
    assert parsed["rest"] == "id: e3\nda"
