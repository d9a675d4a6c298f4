"""``staffroom serve``: rooms and DMs over HTTP (JSON API, SSE streams, webhooks).

Build the app with :func:`create_app` (a gateway you opened) or
:func:`build_app_from_project` (opens everything in its lifespan); configuration is
``server.yaml`` (:func:`load_config`).
"""

from framework.surfaces.server.app import build_app_from_project, create_app
from framework.surfaces.server.config import ServerConfig, load_config

__all__ = ["ServerConfig", "build_app_from_project", "create_app", "load_config"]
