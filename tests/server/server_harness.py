"""What the server tests share, as a module of its own (``from server_harness import ...``):
tokens and a server.yaml (`staffroom serve` as a real process is tests/serve_process.py).
Not in conftest.py: several test folders have a conftest, so ``from conftest import`` finds
whichever was imported first."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paths import ROOT
from serve_process import ServeProcess

ADMIN = "admin-secret-0123456789abcdef"
SUPPORT = "support-secret-0123456789abcdef"
READER = "reader-secret-0123456789abcdef"
LIMITED = "limited-secret-0123456789abcdef"
SUPPORT_ENV = "STAFFROOM_TEST_SUPPORT_TOKEN"

CONFIG = f"""\
heartbeat: 0.3
tokens:
  - name: admin
    secret: {ADMIN}
    operations: [read, open, post, sop.read, sop.write, knowledge.read]
    rate_limit: 0
  - name: support
    secret_env: {SUPPORT_ENV}
    sessions: ["room:support-*", "dm:*@pm"]
    users: [alice, author]
    operations: [read, open, post]
  - name: reader
    secret: {READER}
    operations: [read]
  - name: limited
    secret: {LIMITED}
    operations: [read]
    rate_limit: 3
"""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


TOKENS = {"admin": ADMIN, "support": SUPPORT, "reader": READER, "limited": LIMITED}


@contextmanager
def configured_server(folder: Path, config: str) -> Iterator[ServeProcess]:
    """`staffroom serve` over the repo's project and ``folder``/data, ``config`` as its
    server.yaml and the `support` token's secret in its environment; its log holds no
    traceback once it has stopped."""
    path = folder / "server.yaml"
    path.write_text(config, encoding="utf-8")
    args = ["--config", str(path), "--project", str(ROOT)]
    env = {SUPPORT_ENV: SUPPORT}
    with ServeProcess(folder / "data", folder / "serve.log", args, env) as started:
        yield started
    assert "Traceback" not in started.log()
