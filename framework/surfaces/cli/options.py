"""Settings from the command line and the environment, checked before anything opens.

``--model`` and its environment form ``$STAFFROOM_MODEL`` are checked here in full (parsed,
resolved against models.yaml, the model built once), so a bad value is one error naming the
flag or the variable and the forms it takes, before a room is opened, not a failure deep in
the first turn. The options themselves (``--data-dir``, ``--project``, ``--model``,
``--database``) are
declared here once for the commands that take them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from framework.errors import InputError, ModelError
from framework.phrases import Language

if TYPE_CHECKING:  # pydantic and the spec models load when a command reads its settings
    from framework.settings import Settings
    from framework.specs.model_spec import ModelSpec

MODEL_ENV = "STAFFROOM_MODEL"
MODEL_FORMS = (
    "simulated, openai:NAME[@BASE_URL], import:package.ChatClass, a name defined in "
    "models.yaml, or a mapping such as {provider: openai, name: gemma, base_url: "
    "http://127.0.0.1:8080/v1}"
)
"""Every form ``--model`` / ``$STAFFROOM_MODEL`` takes, for error messages."""

# `serve` takes DataDir as is; its --project has an alias and its --model another help.
DataDir = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Data folder (default: $STAFFROOM_HOME or ./.staffroom)."),
]
Project = Annotated[
    Path | None,
    typer.Option("--project", help="Folder with agents/, scenarios/, sop_library/ (default: .)."),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Model for every employee, over scenario and cards: simulated, "
        "openai:NAME[@BASE_URL], a name from models.yaml, or a {provider: ..., ...} mapping "
        "(default: $STAFFROOM_MODEL).",
    ),
]


DatabaseOption = Annotated[
    str | None,
    typer.Option(
        "--database",
        help="PostgreSQL URL for checkpoints, SOPs and the servers' shared state, so several "
        "replicas share them (default: $STAFFROOM_DATABASE_URL, else SQLite in the data folder).",
    ),
]


def settings_for(
    data_dir: Path | None,
    project: Path | None,
    model: str | None = None,
    *,
    uses_model: bool = False,
    database: str | None = None,
) -> Settings:
    """Settings for one command: flags over ``$STAFFROOM_HOME``/``_PROJECT``/``_MODEL``/
    ``_DATABASE_URL``.

    With ``uses_model`` (run, dm, consolidate) the model override, if any, is also resolved
    and built once, so its mistakes are reported here, naming where it came from.
    """
    from framework.settings import Settings
    from framework.specs.models_file import parse_model_option

    try:
        override = parse_model_option(model, where="--model") if model else None
    except InputError as exc:
        raise _named(exc, "--model") from None
    from framework.database.url import check_database_url

    url = check_database_url(database, where="--database") if database is not None else None
    try:  # parses $STAFFROOM_MODEL (even under --model, which then wins)
        settings = Settings.from_env(
            data_dir=data_dir, project_dir=project, model_override=override, database=url
        )
    except InputError as exc:
        if exc.field != "model":  # the data folder, $STAFFROOM_LOCK: their own errors
            raise
        raise _named(exc, MODEL_ENV) from None
    if uses_model and settings.model_override is not None:
        check_model(settings, settings.model_override, "--model" if model else MODEL_ENV)
    return settings


def label_language(settings: Settings, *, lenient: bool = False) -> Language:
    """The language of a command's own labels: ``$STAFFROOM_LANGUAGE`` (``settings.language``),
    else ``language:`` in the project's ``staffroom.yaml``, else English. A broken
    ``staffroom.yaml`` is an :class:`InputError`, unless ``lenient`` (``validate``, which
    reports it as one of its problems): then English."""
    from framework.specs.project_file import project_language  # the spec models: not for --help

    try:
        return project_language(settings.project_dir, settings.language) or "en"
    except InputError:
        if not lenient:
            raise
        return settings.language or "en"


def check_model(settings: Settings, spec: ModelSpec, where: str) -> None:
    """Resolve ``spec`` against the project's models.yaml and build it (no call is made);
    :class:`InputError` naming ``where`` and the valid forms if either fails."""
    import asyncio

    from framework.models.factory import build_model, close_model  # langchain: only here
    from framework.specs.models_file import MODELS_FILE, ModelRegistry

    # A broken models.yaml is its own error (file:line), not the flag's or the variable's.
    registry = ModelRegistry.load(settings.project_dir / MODELS_FILE)
    try:
        resolved = registry.resolve(spec, where=where)
        built = build_model(resolved, allow_network=settings.allow_network)
    except (InputError, ModelError) as exc:
        raise _named(exc, where, sorted(registry.models)) from None
    # The check's model is not the one the room uses: release its HTTP client now.
    asyncio.run(close_model(built))


def _named(
    exc: InputError | ModelError, where: str, defined: list[str] | None = None
) -> InputError:
    """``exc`` as one error about ``where`` (the flag or the variable) listing the forms."""
    message = exc.message if isinstance(exc, InputError) else str(exc)
    message = message.removeprefix(f"{where}: ")  # the field says it already
    value = os.environ.get(MODEL_ENV, "") if where == MODEL_ENV else ""
    if value and value not in message:  # say which value: the environment is out of sight
        message += f" ({MODEL_ENV}={value!r})"
    fix = f"use {MODEL_FORMS}"
    if defined is not None:
        fix += f" (names defined now: {', '.join(defined) or 'none'})"
    if where == MODEL_ENV:
        fix += f"; or unset {MODEL_ENV} to use each card's own model"
    return InputError(message, field=where, fix=fix)
