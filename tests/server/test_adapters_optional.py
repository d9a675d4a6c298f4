"""The chat adapters are an optional extra (``staffroom[adapters]``): `staffroom serve` mounts
their webhooks when their SDKs import, and in a real process where those imports fail (a
``sitecustomize`` blocks ``slack_sdk`` and ``lark_oapi``, as an install without the extra
lacks them) their routes are absent and the log and the API docs say so."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import httpx
from cli_in_process import CliResult
from serve_process import ServeProcess

WITHOUT_THE_EXTRA = """\
import importlib.abc
import sys


class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("slack_sdk", "lark_oapi"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
"""
NOT_SERVED = "Chat-platform webhooks (/adapters/*) are not served"


def no_extra(tmp_path: Path, env: dict[str, str]) -> dict[str, str]:
    """``env`` for a process in which the adapters' SDKs cannot be imported."""
    site = tmp_path / "without_adapters"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(WITHOUT_THE_EXTRA, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path}


def adapter_paths(server: ServeProcess) -> list[str]:
    paths = httpx.get(f"{server.url}/openapi.json", timeout=30).json()["paths"]
    return sorted(p for p in paths if p.startswith("/adapters/"))


def test_without_the_extra_the_adapter_routes_are_absent_and_said_so(
    tmp_path: Path,
    server_yaml: Path,
    start_server: Callable[..., ServeProcess],
    support_env: dict[str, str],
) -> None:
    env = no_extra(tmp_path, support_env)
    server = start_server("--config", str(server_yaml), data=tmp_path / "d", env=env)
    assert adapter_paths(server) == []
    document = httpx.get(f"{server.url}/openapi.json", timeout=30).json()
    assert NOT_SERVED in document["info"]["description"]
    assert "pip install 'staffroom[adapters]'" in document["info"]["description"]
    assert "/api/sops" in document["paths"], "the server's own routes are all there"
    assert NOT_SERVED in server.log(), "the startup log says it too"
    absent = httpx.post(f"{server.url}/adapters/slack/events", content=b"{}", timeout=30)
    assert absent.status_code == 404 and absent.json()["error"]["type"] == "not_found"


def test_a_config_asking_for_adapters_without_the_extra_is_refused(
    tmp_path: Path,
    server_yaml: Path,
    run_serve: Callable[..., CliResult],
    support_env: dict[str, str],
) -> None:
    config = tmp_path / "with-adapters.yaml"
    text = server_yaml.read_text(encoding="utf-8")
    config.write_text(text + "adapters:\n  slack:\n    signing_secret: s\n", encoding="utf-8")
    data = str(tmp_path / "d")
    done = run_serve(
        "--config", str(config), "--data-dir", data, env=no_extra(tmp_path, support_env)
    )
    assert done.code == 2
    said = " ".join(done.err.split())
    assert "the adapters section needs the adapters extra" in said
    assert "pip install 'staffroom[adapters]'" in said


def test_with_the_extra_the_adapter_routes_are_mounted(
    tmp_path: Path,
    server_yaml: Path,
    start_server: Callable[..., ServeProcess],
    support_env: dict[str, str],
) -> None:
    server = start_server("--config", str(server_yaml), data=tmp_path / "d", env=support_env)
    assert adapter_paths(server) == ["/adapters/feishu/events", "/adapters/slack/events"]
    # Mounted, with no platform configured: the adapter answers and says how to add one.
    answer = httpx.post(f"{server.url}/adapters/slack/events", content=b"{}", timeout=30)
    assert answer.status_code == 404 and answer.json()["error"]["type"] == "not_configured"
    assert NOT_SERVED not in server.log()
