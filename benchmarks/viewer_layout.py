"""Benchmark: does the room viewer fit a laptop and a phone?

Run: ``.venv/bin/python benchmarks/viewer_layout.py [--widths 1280 390]`` (needs Debian's
chromium: ``make browser``).

Starts the server on the offline simulator over a copy of the project whose scenario has a
long English title, runs a room to its end in headless Chromium, opens the SOP library with
"Why the best wins" unfolded, and prints for each view and window width: how wide the page
is (``scrollWidth``; wider than the window means sideways scrolling) and how many visible
elements reach past the window's right edge (outside any scrolling box).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "viewer")]

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402
from test_viewer_people import long_titled_project  # noqa: E402
from viewer_harness import ARGS, CHROMIUM, MANAGER, Server  # noqa: E402

MEASURE = """() => {
    const width = document.documentElement.clientWidth;
    let past = 0;
    for (const e of document.body.querySelectorAll("*")) {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) continue;
        let clipped = false;
        for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
            if (getComputedStyle(a).overflowX !== "visible") { clipped = true; break; }
        }
        if (!clipped && r.right > width + 1) past += 1;
    }
    return [document.documentElement.scrollWidth, past];
}"""


def measure(page: Page, view: str, width: int) -> None:
    page_width, past = page.evaluate(MEASURE)
    print(f"| {view:<14} | {width:>6} | {page_width:>10} | {past:>14} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--widths", type=int, nargs="+", default=[1280, 390])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="viewer-layout-"))
    server = Server(root, args=["--project", str(long_titled_project(root))])
    server.start()
    print("| view           | window | page width | elements past |")
    print("|----------------|-------:|-----------:|--------------:|")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for n, width in enumerate(args.widths):
                page = browser.new_page(viewport={"width": width, "height": 900}, locale="en-US")
                page.set_default_timeout(60_000)
                page.goto(server.url + "/")
                page.fill("#token-input", MANAGER)
                page.click("#token-form button[type=submit]")
                expect(page.locator("#open-scenario option")).to_have_count(1, timeout=60_000)
                measure(page, "rooms (empty)", width)
                page.fill("#open-id", f"layout-{n}")
                page.click("#open-form button[type=submit]")
                expect(page.locator('#transcript li[data-kind="wait"]')).to_have_count(1)
                page.fill("#post-text", "Looks good, continue.")
                page.click("#post-send")
                expect(page.locator('#transcript li[data-kind="outcome"]')).to_have_count(1)
                measure(page, "room (ended)", width)
                page.click("#tab-sops")
                explain = page.locator("details.explain").first
                explain.locator("summary").click()
                expect(explain.locator("pre")).to_be_visible()
                measure(page, "SOPs + explain", width)
                page.close()
            browser.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
