"""Schemathesis (its `st run` CLI) fuzzes the OpenAPI document of a real server with a valid
token and both chat adapters configured: no request may get a 5xx, every error answer is JSON
with ``error.message``, and the server log holds no traceback.

The adapter callbacks take the raw body (their signature is over its bytes), so their body
shapes are documented with ``openapi_extra``; schemathesis sends those shapes and their
negations, unsigned: each must be a 400 or 401.

Bounded: at most 30 examples per operation, one worker, and a post with ``wait: true`` held
at most ``wait_limit`` (1 s here, 30 by default: the 202 answers a held post gives would
otherwise take most of ten minutes). The event stream is left out (a 200 there streams
forever); tests/server/test_streams.py covers it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from paths import ROOT

STREAM = r"^/api/sessions/\{key\}/events$"
ADAPTERS = """\
wait_limit: 1
adapters:
  slack:
    signing_secret: fuzz-slack-signing-secret
    bot_token: xoxb-fuzz
    api_url: http://127.0.0.1:9/api/
    groups: {"*": {scenario: tech-article}}
  feishu:
    app_id: cli_fuzz
    app_secret: fuzz-feishu-app-secret
    verification_token: fuzz-feishu-verification-token
    encrypt_key: fuzz-feishu-encrypt-key
    max_clock_skew: 300
    domain: http://127.0.0.1:9
    groups: {"*": {scenario: tech-article}}
"""


def test_fuzzing_the_openapi_document_finds_no_server_error(
    tmp_path: Path, server_yaml: Path, start_server: Any, support_env: dict[str, str], auth: Any
) -> None:
    config = tmp_path / "server-adapters.yaml"
    config.write_text(server_yaml.read_text("utf-8") + ADAPTERS, encoding="utf-8")
    server = start_server(
        "--config",
        str(config),
        "--project",
        str(ROOT),
        env=support_env,
    )
    har = tmp_path / "har.json"
    st = Path(sys.executable).with_name("st")
    done = subprocess.run(
        [
            str(st),
            "run",
            f"{server.url}/openapi.json",
            "--header",
            f"Authorization: {auth('admin')['Authorization']}",
            "--checks",
            "not_a_server_error",
            "--exclude-path-regex",
            STREAM,
            "--max-examples",
            "30",
            "--workers",
            "1",
            "--seed",
            "12",
            "--request-timeout",
            "60",
            "--report",
            "har",
            "--report-har-path",
            str(har),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:] + server.log()[-4000:]

    entries = json.loads(har.read_text("utf-8"))["log"]["entries"]
    assert len(entries) > 300
    problems = []
    for entry in entries:
        status = entry["response"]["status"]
        text = entry["response"]["content"].get("text", "")
        if status >= 500:
            problems.append(f"{status} {entry['request']['method']} {entry['request']['url']}")
        elif status >= 400 and not _error_message(text):
            problems.append(f"{status} without a JSON error: {entry['request']['url']} {text!r}")
    assert not problems, "\n".join(problems[:20])

    spec = json.loads(_get(server.url + "/openapi.json"))
    wanted = {
        (method.upper(), path)
        for path, item in spec["paths"].items()
        if not re.match(STREAM, path)
        for method in item
    }
    hit = {(e["request"]["method"], _template(e["request"]["url"], spec)) for e in entries}
    assert wanted <= hit, f"never called: {sorted(wanted - hit)}"

    # The callbacks were sent bodies of their documented shape and its negations (a header
    # that is a string, a token that is a number...), not only empty requests, and refused
    # each as a 400 (not the platform's shape) or 401 (not signed by it).
    for path in ("/adapters/slack/events", "/adapters/feishu/events"):
        posts = [
            e
            for e in entries
            if e["request"]["method"] == "POST" and _template(e["request"]["url"], spec) == path
        ]
        shaped = [e for e in posts if e["request"].get("postData", {}).get("text", "")[:1] == "{"]
        assert len(shaped) >= 10, f"{path}: {len(shaped)} bodies of its shape"
        assert {e["response"]["status"] for e in posts} <= {400, 401}, path
    assert "Traceback" not in server.log()


def _error_message(text: str) -> bool:
    try:
        return bool(json.loads(text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return False


def _get(url: str) -> str:
    import httpx

    return httpx.get(url, timeout=60).text


def _template(url: str, spec: dict[str, Any]) -> str:
    """The OpenAPI path an URL was made from (``/api/sessions/{key}/status``)."""
    path = "/" + url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
    for template in spec["paths"]:
        pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]*", re.escape(template)) + "$"
        if re.match(pattern, path):
            return str(template)
    return path
