"""Test helper, run as a script: the Staffroom server on 127.0.0.1:PORT over a data folder.

Offline: the project's agents and scenarios (``--project``: another project's) with the
deterministic simulator (a test double) and the network switched off; ``--model-url``: every
employee on an OpenAI-compatible server on this machine instead (tests/stub_openai.py).
Tokens come from ``--config`` (server.yaml) and ``$STAFFROOM_TOKEN``, as ``staffroom serve``
reads them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import uvicorn

from framework.settings import Settings
from framework.specs.model_spec import ModelSpec
from framework.surfaces.server.app import build_app_from_project
from framework.surfaces.server.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--no-auth", action="store_true")
    parser.add_argument("--project", type=Path, default=ROOT)
    parser.add_argument("--model-url")
    args = parser.parse_args()
    # As `staffroom serve` makes them: $STAFFROOM_LANGUAGE is read here, the viewer's label
    # language over the project's staffroom.yaml.
    settings = Settings.from_env(
        data_dir=args.data, project_dir=args.project, allow_network=False, model_backoff=0.01
    )
    if args.model_url:
        spec = ModelSpec.model_validate(
            {"provider": "openai", "name": "gemma-3-270m", "base_url": args.model_url}
        )
        settings = settings.model_copy(update={"model_override": spec, "model_retries": 0})
    app = build_app_from_project(settings, load_config(args.config, no_auth=args.no_auth))
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, log_level="warning", timeout_graceful_shutdown=5
    )


if __name__ == "__main__":
    main()
