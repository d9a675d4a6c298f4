"""Named models: ``models.yaml`` at a project's root, and where an employee's model comes from.

``models.yaml`` maps a name to a model, so cards say ``model: local`` and one file says where
``local`` lives::

    local:
      provider: openai
      name: gemma-3-270m
      base_url: http://127.0.0.1:8080/v1
      context_window: 4096
      max_output_tokens: 256
      system_role: fold

Precedence, first that is set wins: the ``--model`` flag (or ``$STAFFROOM_MODEL``, its
environment form), the scenario's ``settings.model``, the card's ``model``, then
``Settings.default_model`` (the offline simulator).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import RootModel, ValidationError

from framework.errors import InputError, UnknownNameError

from ._explain import hint
from .model_spec import ModelSpec
from .yaml_loader import LineMap, load_yaml_file, validate

MODELS_FILE = "models.yaml"


class ModelsFileError(InputError):
    """``models.yaml`` is malformed."""


class _ModelsDoc(RootModel[dict[str, ModelSpec]]):
    pass


@dataclass(frozen=True, slots=True)
class ModelRegistry:
    """The named models of a project (empty when it has no ``models.yaml``)."""

    models: dict[str, ModelSpec] = field(default_factory=dict)
    source: Path | None = None
    lines: LineMap = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> ModelRegistry:
        """Read ``path`` (a missing file is an empty registry); errors name file:line."""
        path = Path(path)
        if not path.is_file():
            return cls(source=path)
        data, lines = load_yaml_file(path, error_cls=ModelsFileError)
        if data is None:
            return cls(source=path, lines=lines)
        doc = validate(_ModelsDoc, data, file=path, lines=lines, error_cls=ModelsFileError)
        for name, spec in doc.root.items():
            if spec.named is not None:
                raise ModelsFileError(
                    f"model '{name}' refers to another named model '{spec.named}'",
                    file=path,
                    line=lines.get((name,)),
                    field=name,
                    fix="write the provider, name and base_url here (names are not chained)",
                )
        return cls(dict(doc.root), path, lines)

    def resolve(self, spec: ModelSpec, *, where: str) -> ModelSpec:
        """``spec`` with a name replaced by the named model (fields set in ``spec`` win).

        ``where`` says who named it (a card's file:line, ``--model``) for the error.
        """
        if spec.named is None:
            return spec
        base = self.models.get(spec.named)
        if base is None:
            known = ", ".join(sorted(self.models)) or "none"
            place = self.source or Path(MODELS_FILE)
            raise UnknownNameError(
                f"unknown model '{spec.named}'{hint(spec.named, list(self.models))} in {where}",
                field="model",
                fix=f"use simulated, openai:<model>[@<base url>], import:<module.Class>, or "
                f"a name defined in {place} (defined: {known})",
            )
        try:
            return spec.merged_over(base)
        except ValidationError as exc:
            _, message, fix = _first_problem(exc)
            raise InputError(
                f"{where}: model '{spec.named}' with these overrides is not valid: {message}",
                field="model",
                fix=fix or "override only fields that fit the named model",
            ) from None


def _first_problem(exc: ValidationError) -> tuple[str, str, str | None]:
    """``(location, message, fix)`` of a spec's first validation error, in our words where
    a validator gave them (``spec_error``), else pydantic's."""
    first = exc.errors()[0]
    ctx = first.get("ctx") or {}
    loc = ".".join(str(p) for p in first["loc"])
    fix = ctx.get("fix")
    return loc, str(ctx.get("message") or first["msg"]), str(fix) if fix else None


def parse_model_option(text: str, *, where: str) -> ModelSpec:
    """A model from a command-line flag or environment variable.

    Accepts the shorthand (``simulated``, ``openai:NAME[@URL]``, ``import:pkg.Class``, a name
    from models.yaml) or an inline YAML/JSON mapping (``{provider: openai, name: x, ...}``).
    """
    raw: Any = text
    if text.strip().startswith("{"):
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(
                f"{where}: not a valid YAML/JSON mapping ({exc})",
                field="model",
                fix="write e.g. {provider: openai, name: gemma, base_url: http://127.0.0.1:8080/v1}",
            ) from None
    try:
        return ModelSpec.model_validate(raw)
    except ValidationError as exc:
        loc, message, fix = _first_problem(exc)
        raise InputError(
            f"{where}: bad model {text!r}: {loc + ': ' if loc else ''}{message}",
            field="model",
            fix=fix or "see `staffroom schema employee` for the model fields",
        ) from None


def model_problems(
    project: Path, employees: Iterable[Any], scenarios: Iterable[Any]
) -> list[InputError]:
    """Problems of a project's ``models.yaml`` and of the model names its cards use.

    ``employees`` and ``scenarios`` are loaded cards and scenarios (anything with ``model`` /
    ``settings.model``, ``source`` and ``line_of``).
    """
    try:
        registry = ModelRegistry.load(Path(project) / MODELS_FILE)
    except InputError as exc:
        return [exc]
    problems: list[InputError] = []
    named: list[tuple[ModelSpec | None, Any, tuple[str, ...]]] = [
        (card.model, card, ("model",)) for card in employees
    ]
    named += [(s.settings.model, s, ("settings", "model")) for s in scenarios]
    for spec, owner, path in named:
        if spec is None or spec.named is None:
            continue
        try:
            registry.resolve(spec, where=f"{owner.source}")
        except UnknownNameError as exc:
            problems.append(
                UnknownNameError(
                    exc.message,
                    file=owner.source,
                    line=owner.line_of(*path),
                    field=".".join(path),
                    fix=exc.fix,
                )
            )
    return problems
