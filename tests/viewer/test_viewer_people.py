"""The viewer as people read it: every event a sentence in their language, the SOP version a
room really ran, a busy sign while a model thinks, which model wrote a reply, local times,
and a page that fits a laptop (1280 px) and a phone (390 px) without overlap or sideways
scrolling. A real server process and headless Chromium (see conftest.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from paths import ROOT
from playwright.sync_api import Page, expect
from room_log import KEY, write_log
from serve_process import ServeProcess
from stub_openai import StubOpenAI
from viewer_harness import MANAGER, Pages, viewer_server

from framework.sessions.events import EventKind

HAN = re.compile(r"[\u4e00-\u9fff]")
MACHINE = re.compile(r"undefined|\bnull\b|\bNone\b|NaN|\[object|\{\"|\"\s*:|\d{4}-\d\d-\d\dT\d\d:")
"""What a sentence for people never holds: JavaScript's and Python's empty values, raw JSON,
ISO timestamps."""


def transcript_texts(page: Page) -> list[dict[str, Any]]:
    return page.locator("#transcript > li").evaluate_all(
        """els => els.map(e => ({
            kind: e.dataset.kind,
            text: e.innerText,
            said: [...e.querySelectorAll('.said')].map(s => s.innerText),
            time: e.querySelector('time').innerText,
        }))"""
    )


@pytest.mark.parametrize(
    ("language", "project", "browser_locale"),
    [("en", None, "en-US"), ("zh", "zh", "en-US"), ("zh", None, "zh-CN")],
    ids=["browser-en", "project-zh-over-browser-en", "browser-zh"],
)
def test_every_event_kind_reads_as_a_sentence(
    pages: Pages, tmp_path: Path, language: str, project: str | None, browser_locale: str
) -> None:
    env = {"STAFFROOM_LANGUAGE": project} if project else {}
    with viewer_server(tmp_path, no_auth=True, env=env) as server:
        events = write_log(server.data)
        assert {e.kind for e in events} == set(EventKind), "the log lacks an event kind"
        page = pages.open(locale=browser_locale, timezone_id="Asia/Shanghai")
        page.goto(f"{server.url}/#{KEY}")
        expect(page.locator("#transcript > li")).to_have_count(len(events))
        shown = transcript_texts(page)

    for kind in EventKind:
        assert any(s["kind"] == kind for s in shown), f"no line for {kind}"
    for line in shown:
        assert not MACHINE.search(line["text"]), f"machine text in a {line['kind']} line"
        assert line["said"] or line["kind"] == "message", f"{line['kind']}: no sentence"
    # Times in the reader's zone (09:15 UTC is 17:15 in Shanghai), never ISO.
    assert "17:15:00" in shown[0]["time"]

    said = {line["kind"]: " ".join(line["said"]) for line in reversed(shown)}
    expected_tab = "Rooms" if language == "en" else "房间"
    expect(page.locator("#tab-rooms")).to_have_text(expected_tab)
    if language == "en":
        # The framework's words around the (English) room text are English.
        for line in shown:
            for sentence in line["said"]:
                assert not HAN.search(sentence), f"Chinese in an English {line['kind']} line"
        assert said["outcome"] == "The run finished all 2 steps in 3 turns."
        assert "Waiting for author to answer after step 2." in shown_said(shown, "wait")
        assert said["consolidation"].startswith("Summarised 12 messages into 3 lines")
    else:
        assert said["outcome"] == "运行完成全部 2 步，共 3 轮。"
        assert "等待 author 回复" in " ".join(shown_said(shown, "wait"))

    # The model that wrote a reply, and how long it took; the simulator's badge says so.
    reply = page.locator("#transcript li.message", has_text="payment gateway")
    expect(reply.locator(".badge.model")).to_contain_text("gemma-3-270m")
    took = "1 min 37 s" if language == "en" else "1 分 37 秒"
    expect(reply.locator(".badge.model")).to_contain_text(took)
    expect(page.locator("#transcript li.message .badge.sim")).to_have_count(1)

    # The SOP panel: the version the room ran, and that it was on trial against the best.
    expect(page.locator("#sop-ref")).to_have_text("tech-article@1")
    trial = "On trial" if language == "en" else "试用中"
    expect(page.locator("#sop-trial")).to_contain_text(trial)
    expect(page.locator("#sop-trial")).to_contain_text("tech-article@2")
    expect(page.locator("#sop-trial")).to_contain_text("50%")

    # The outcome box holds only what the events hold: no "0.0 s", the late feedback's score.
    facts = page.locator("#outcome-facts").inner_text()
    assert not MACHINE.search(facts)
    assert "0.0" not in facts
    score = "score" if language == "en" else "评分"
    expect(page.locator("#outcome-facts dt", has_text=score)).to_have_count(1)


def shown_said(shown: list[dict[str, Any]], kind: str) -> list[str]:
    return [s for line in shown if line["kind"] == kind for s in line["said"]]


def test_the_label_table_is_complete_in_both_languages(pages: Pages, server: ServeProcess) -> None:
    page = pages.open()
    page.goto(server.url + "/")
    table = page.evaluate("""async () => (await import("/viewer/labels.js")).LABELS""")
    en, zh = table["en"], table["zh"]
    assert set(en) == set(zh), "a label is missing in one language"
    for key in en:
        assert not HAN.search(en[key]), f"Chinese in the English label {key}"
        assert set(re.findall(r"\{\w+\}", en[key])) == set(re.findall(r"\{\w+\}", zh[key])), key
    # Every label the page's HTML asks for is in the table.
    asked = page.evaluate(
        """() => [...document.querySelectorAll('[data-label]'), ...document.querySelector(
            '#version-template').content.querySelectorAll('[data-label]')]
            .map(e => e.dataset.label)"""
    )
    assert asked and set(asked) <= set(en)
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/viewer/settings.json").json() == {"language": None}


# -- layout ------------------------------------------------------------------------------------

LONG_TITLE = "Customer escalation: triage, diagnose and answer within the hour (enterprise tier)"

BOXES = """(containers) => {
    const width = document.documentElement.clientWidth;
    const problems = [];
    const visible = (e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== "hidden";
    };
    // Nothing reaches past the window's right edge, unless a scrolling box clips it.
    for (const e of document.body.querySelectorAll("*")) {
        if (!visible(e)) continue;
        let clipped = false;
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== "visible") { clipped = true; break; }
        }
        const r = e.getBoundingClientRect();
        if (!clipped && (r.right > width + 1 || r.left < -1)) {
            problems.push(`${e.tagName}#${e.id}.${e.className} spans ${r.left}..${r.right}`);
        }
    }
    // The parts of each container stay inside it and do not overlap each other.
    for (const selector of containers) {
        for (const box of document.querySelectorAll(selector)) {
            if (!visible(box)) continue;
            const outer = box.getBoundingClientRect();
            const parts = [...box.children].filter(visible);
            // Each line box of a part (an inline part that wraps has several).
            const boxes = (e) => [...e.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
            parts.forEach((p, i) => {
                const r = p.getBoundingClientRect();
                if (r.left < outer.left - 1 || r.right > outer.right + 1) {
                    problems.push(`${selector} > ${p.tagName}.${p.className} outside its box`);
                }
                for (const q of parts.slice(i + 1)) {
                    const hit = boxes(p).some((a) => boxes(q).some((b) =>
                        Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
                        && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1));
                    if (hit) {
                        const a = `${p.tagName}.${p.className}`, b = `${q.tagName}.${q.className}`;
                        problems.push(`${selector}: ${a} overlaps ${b}`);
                    }
                }
            });
        }
    }
    if (document.documentElement.scrollWidth > width) {
        problems.push(`the page is ${document.documentElement.scrollWidth} px wide in ${width}`);
    }
    return problems;
}"""
ROOM_PARTS = [
    "header",
    "nav",
    "#rooms-view",
    "aside",
    "#open-form",
    "#open-form label",
    "#room",
    "#post-form",
    "#outcome-facts",
    "#transcript > li",
]
SOP_PARTS = ["header", "#sops-view", ".sop", ".version", ".actions", ".actions > span", ".editor"]


def long_titled_project(root: Path) -> Path:
    """The project's agents, SOPs and scenario, the scenario with a long English title."""
    project = root / "project"
    for part in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / part, project / part)
    for extra in ("models.yaml",):
        if (ROOT / extra).is_file():
            shutil.copy(ROOT / extra, project / extra)
    for other in (project / "scenarios").glob("escalation*"):
        other.unlink()  # one scenario: the one with the long title
    scenario = project / "scenarios" / "tech_article.yaml"
    text = scenario.read_text("utf-8")
    scenario.write_text(re.sub(r"^title: .*$", f'title: "{LONG_TITLE}"', text, flags=re.M), "utf-8")
    return project


def check_boxes(page: Page, containers: list[str]) -> None:
    problems = page.evaluate(BOXES, containers)
    assert problems == [], "\n".join(problems[:20])


@pytest.mark.parametrize("width", [1280, 390])
def test_no_overlap_or_sideways_overflow(pages: Pages, tmp_path: Path, width: int) -> None:
    with viewer_server(tmp_path, project=long_titled_project(tmp_path)) as server:
        page = pages.open(viewport={"width": width, "height": 900})
        page.goto(server.url + "/")
        expect(page.locator("#token-form")).to_be_visible()
        check_boxes(page, ["header", "#token-form"])
        page.fill("#token-input", MANAGER)
        page.click("#token-form button[type=submit]")
        expect(page.locator("#open-scenario option")).to_have_text(
            [re.compile(re.escape(LONG_TITLE))]
        )
        check_boxes(page, ROOM_PARTS)

        # A room run to its end: transcript, SOP panel, outcome, the post box.
        page.fill("#open-id", "escalation-with-a-rather-long-room-name-4411")
        page.click("#open-form button[type=submit]")
        expect(page.locator('#transcript li[data-kind="wait"]')).to_have_count(1)
        page.fill("#post-text", "Looks good, continue. " + "x" * 300)
        page.click("#post-send")
        expect(page.locator('#transcript li[data-kind="outcome"]')).to_have_count(1)
        expect(page.locator("#outcome-facts dt").first).to_be_visible()
        check_boxes(page, ROOM_PARTS)

        # The SOP library with its explanation open and a version being edited.
        page.click("#tab-sops")
        explain = page.locator("details.explain").first
        explain.locator("summary").click()
        expect(explain.locator("pre")).to_be_visible()
        page.locator("article.version .edit").first.click()
        expect(page.locator("article.version .editor").first).to_be_visible()
        check_boxes(page, SOP_PARTS)


# -- the version a room ran ---------------------------------------------------------------------


def test_a_reopened_room_shows_the_version_it_ran(page: Page, server: ServeProcess) -> None:
    page.goto(server.url + "/")
    page.fill("#token-input", MANAGER)
    page.click("#token-form button[type=submit]")
    page.fill("#open-id", "ran-v1")
    page.select_option("#open-scenario", "tech-article")
    page.click("#open-form button[type=submit]")
    expect(page.locator('#transcript li[data-kind="wait"]')).to_have_count(1)
    page.fill("#post-text", "Looks good, continue.")
    page.click("#post-send")
    expect(page.locator('#transcript li[data-kind="outcome"]')).to_have_count(1)

    # v2 is published and v1 retired; a new server reopens the room on today's best.
    with server.client(MANAGER) as client:
        card = client.get("/api/sops/tech-article/versions/1").json()["card"]
        edited = card.replace("合规自检与定稿：", "合规自检、事实核查与定稿：")
        body = {"base": 1, "card": edited, "note": "add a fact check", "author": "alice"}
        assert client.post("/api/sops/tech-article/versions", json=body).status_code < 300
        approve = {"reviewer": "alice"}
        assert client.post("/api/sops/tech-article/versions/2/approve", json=approve).is_success
        assert client.post("/api/sops/tech-article/versions/2/publish", json={}).is_success
        retire = {"reason": "superseded"}
        assert client.post("/api/sops/tech-article/versions/1/deprecate", json=retire).is_success
    server.restart()
    with server.client(MANAGER) as client:
        status = client.get("/api/sessions/room:ran-v1/status").json()
    assert status["sop"] == "tech-article@2", "the room's plan would now run v2"

    page.reload()
    expect(page.locator("#transcript li[data-kind='outcome']")).to_have_count(1)
    expect(page.locator("#sop-ref")).to_have_text("tech-article@1")
    expect(page.locator("#sop-steps li").last).to_contain_text("合规自检与定稿")


# -- a real model: the busy sign and the model badge --------------------------------------------


def test_a_slow_real_model_shows_a_busy_sign_and_its_badge(pages: Pages, tmp_path: Path) -> None:
    stub = StubOpenAI(default_text="Diagnosis: the gateway times out.")
    with stub, viewer_server(tmp_path, no_auth=True, model_url=stub.base_url) as server:
        page = pages.open()
        page.goto(server.url + "/")
        page.fill("#open-id", "slow")
        page.click("#open-form button[type=submit]")
        waits = page.locator('#transcript li[data-kind="wait"]')
        expect(waits).to_have_count(1)
        expect(page.locator("#busy")).to_be_hidden()

        stub.delay(3)  # the next model call takes 3 s, as a real one takes 97
        page.fill("#post-text", "Looks good, continue.")
        page.click("#post-send")
        expect(page.locator("#busy")).to_be_visible()
        expect(page.locator("#busy-text")).to_contain_text("Working on it")
        ended = page.locator(
            '#transcript li[data-kind="outcome"], #transcript li[data-kind="wait"]'
        )
        expect(ended).to_have_count(2)
        expect(page.locator("#busy")).to_be_hidden()
    badge = page.locator("#transcript li.message .badge.model").first
    expect(badge).to_contain_text("gemma-3-270m")
    expect(page.locator("#transcript li.message .badge.sim")).to_have_count(0)
