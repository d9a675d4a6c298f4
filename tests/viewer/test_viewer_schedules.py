"""The viewer's schedules view in a real headless Chromium against a real server (its scheduler
running, the offline simulator): each schedule's next fire on its own clock, run now (a double
click starts one run) and its outcome, pause and resume; a token without the ``schedule``
operation is refused with the fix; the labels in Chinese."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from paths import ROOT
from playwright.sync_api import Page, expect
from viewer_harness import CHROMIUM, MANAGER, VIEWER, Pages, viewer_server

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).is_file(), reason="needs Debian's chromium (.ci/run installs it)"
)

SCHEDULES = """\
timezone: Asia/Shanghai
schedules:
  standup:
    cron: "30 9 * * mon-fri"
    start: {dm: {employee: pm, user: lead, message: "Stand-up: what is next?"}}
  weekly:
    cron: "0 17 * * fri"
    enabled: false
    start: {dm: {employee: designer, user: lead, message: "Weekly review"}}
"""


def scheduled_project(root: Path) -> Path:
    project = root / "project"
    for part in ("agents", "scenarios", "sop_library"):
        shutil.copytree(ROOT / part, project / part)
    (project / "schedules.yaml").write_text(SCHEDULES, encoding="utf-8")
    return project


def sign_in(page: Page, url: str, token: str) -> None:
    page.goto(url + "/")
    page.fill("#token-input", token)
    page.click("#token-form button[type=submit]")
    expect(page.locator("#token-form")).to_be_hidden()
    page.click("#tab-schedules")


def test_schedules_show_their_next_fire_and_run_pause_and_resume(
    pages: Pages, tmp_path: Path
) -> None:
    with viewer_server(tmp_path, project=scheduled_project(tmp_path)) as server:
        page = pages.open()
        sign_in(page, server.url, MANAGER)
        standup = page.locator('section.schedule[data-schedule="standup"]')
        expect(standup.locator(".next")).to_contain_text("09:30")
        expect(standup.locator(".when")).to_have_text("30 9 * * mon-fri (Asia/Shanghai)")
        expect(standup.locator(".badge.state")).to_have_text("active")
        expect(standup.locator(".missed")).to_have_text("missed: 0")
        weekly = page.locator('section.schedule[data-schedule="weekly"]')
        expect(weekly.locator(".badge.state")).to_have_text("disabled in the file")
        expect(page.locator("#scheduler-health")).to_contain_text("scheduler")

        # Run now, twice in a row: one run, and the page says the second ran already.
        standup.locator("button.run-now").click()
        expect(standup.locator(".said")).to_contain_text("started")
        standup.locator("button.run-now").click()
        expect(standup.locator(".said")).to_contain_text("has run already")
        expect(standup.locator('.fires li[data-state="done"]')).to_have_count(1)
        expect(standup.locator(".fires li")).to_have_count(1)
        expect(standup.locator(".fires li .kind")).to_have_text(" run now")
        link = standup.locator(".fires li a.session")
        expect(link).to_have_text("dm:lead@pm")

        # Pause: no next fire until resumed.
        standup.locator("button.pause").click()
        expect(standup.locator(".badge.state")).to_contain_text("paused since")
        expect(standup.locator(".next")).to_have_text("next: none while paused or disabled")
        standup.locator("button.resume").click()
        expect(standup.locator(".badge.state")).to_have_text("active")
        expect(standup.locator(".next")).to_contain_text("09:30")

        # The fire's session opens in the rooms view, with the stand-up's question in it.
        link.click()
        expect(page.locator("#room-title")).to_have_text("dm:lead@pm")
        expect(page.locator("#transcript")).to_contain_text("Stand-up: what is next?")

        # A token that may only look is refused, with what to change.
        reader = pages.open(locale="zh-CN")
        sign_in(reader, server.url, VIEWER)
        expect(reader.locator("#tab-schedules")).to_have_text("计划")
        mine = reader.locator('section.schedule[data-schedule="standup"]')
        expect(mine.locator(".fires li .badge.outcome")).to_have_text("完成")
        mine.locator("button.pause").click()
        expect(mine.locator(".error")).to_contain_text("'schedule'")
        expect(mine.locator(".error .fix")).to_contain_text("server.yaml")
        expect(mine.locator(".badge.state")).to_have_text("启用")
