"""Test helper, run as a script: the Staffroom server on 127.0.0.1:PORT over a data folder.

Offline: the project's agents and scenarios with the deterministic simulator (a test double)
and the network switched off. Tokens come from ``--config`` (server.yaml) and
``$STAFFROOM_TOKEN``, as ``staffroom serve`` reads them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import uvicorn

from framework.settings import Settings
from framework.surfaces.server.app import build_app_from_project
from framework.surfaces.server.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--no-auth", action="store_true")
    args = parser.parse_args()
    settings = Settings(
        data_dir=args.data, project_dir=ROOT, allow_network=False, model_backoff=0.01
    )
    app = build_app_from_project(settings, load_config(args.config, no_auth=args.no_auth))
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=5
    )


if __name__ == "__main__":
    main()
