"""A real server process per test (`staffroom serve`, tests/serve_process.py) on a free
127.0.0.1 port over tmp_path's data folder, the offline simulator, and three tokens (a
manager's, a read-only viewer's, a reviewer's); headless Chromium's pages."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from paths import ROOT
from playwright.sync_api import Browser, Page
from serve_process import ServeProcess

MANAGER = "manager-token-0123456789"
VIEWER = "viewer-token-0123456789ab"
BOB = "bob-reviewer-token-0123456789"
"""A reviewer's own token: it may act only for bob."""
CONFIG = f"""\
heartbeat: 1
tokens:
  - name: manager
    secret: {MANAGER}
    operations: [read, open, post, sop.read, sop.write, schedule]
    rate_limit: 0
  - name: viewer
    secret: {VIEWER}
    operations: [read, sop.read]
    rate_limit: 0
  - name: bob
    secret: {BOB}
    users: [bob]
    operations: [sop.read, sop.write]
    rate_limit: 0
"""
NO_TOKENS = "heartbeat: 1\n"
"""The config of a `--no-auth` server (it refuses to start with tokens configured)."""


def viewer_server(
    root: Path,
    *,
    no_auth: bool = False,
    project: Path = ROOT,
    model_url: str | None = None,
    env: dict[str, str] | None = None,
) -> ServeProcess:
    """`staffroom serve` over ``root``/data with the tokens above (``no_auth``: none, 127.0.0.1
    only), the project's employees on the offline simulator, or every one of them on the
    OpenAI-compatible server at ``model_url``; not started yet."""
    config = root / "server.yaml"
    config.write_text(NO_TOKENS if no_auth else CONFIG, encoding="utf-8")
    args = ["--config", str(config), "--project", str(project)]
    args += ["--no-auth"] if no_auth else []
    args += ["--model", f"openai:gemma-3-270m@{model_url}"] if model_url else []
    return ServeProcess(root / "data", root / "server.log", args, env or {})


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT_MS = 60_000
"""How long a step may take to show up (a wait for the page, never an assertion on time)."""


class Pages:
    """Opens pages in fresh browser contexts (a language, a time zone, a window size) and
    fails the test if any of them raised a JavaScript error."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.contexts: list[Any] = []
        self.errors: list[str] = []

    def open(self, **options: Any) -> Page:
        context = self.browser.new_context(**{"locale": "en-US", **options})
        context.set_default_timeout(WAIT_MS)
        self.contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()
