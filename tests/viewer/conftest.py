"""The viewer tests' fixtures: a server process (viewer_harness.py) and a headless Chromium.

The browser is Debian's /usr/bin/chromium driven by Playwright (`make browser` installs it);
the tests that need it are skipped without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from serve_process import ServeProcess
from viewer_harness import ARGS, CHROMIUM, WAIT_MS, Pages, viewer_server

expect.set_options(timeout=WAIT_MS)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServeProcess]:
    with viewer_server(tmp_path) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).is_file():
        pytest.skip("needs Debian's chromium (make browser installs it)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def pages(browser: Browser) -> Iterator[Pages]:
    opened = Pages(browser)
    yield opened
    opened.close()
    assert opened.errors == [], "the page raised JavaScript errors"


@pytest.fixture
def page(pages: Pages) -> Page:
    return pages.open()
