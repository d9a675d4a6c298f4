"""Turn a :class:`ModelSpec` into a LangChain chat model.

``simulated`` is the embedded default (offline, deterministic, labelled). ``openai`` is any
OpenAI-compatible endpoint by URL. ``import`` builds any LangChain ``BaseChatModel`` class by
dotted path, so every provider LangChain supports is one setting away.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from langchain_core.language_models.chat_models import BaseChatModel

from framework.errors import ModelError
from framework.models.simulator import SimulatedChatModel
from framework.specs.model_spec import ModelSpec

ModelFactory = Callable[[ModelSpec, str], BaseChatModel | None]
"""A hook ``(spec, employee_id) -> model``; return None to fall back to :func:`build_model`."""

OFFLINE_PROVIDERS = frozenset({"simulated", "scripted"})


def build_model(spec: ModelSpec, *, allow_network: bool = True) -> BaseChatModel:
    """Build the chat model ``spec`` names; raise :class:`ModelError` with the fix if it can't."""
    if spec.provider not in OFFLINE_PROVIDERS and not allow_network:
        raise ModelError(
            f"model '{spec.label}' needs the network, which these settings forbid "
            "(allow_network=False); use 'simulated' or inject a model_factory"
        )
    if spec.provider == "simulated":
        return SimulatedChatModel(delay=float(spec.options.get("delay", 0.0)))
    if spec.provider == "scripted":
        raise ModelError(
            "the 'scripted' model has no replies of its own; pass a model_factory that returns "
            "a ScriptedChatModel (see framework.models.scripted)"
        )
    if spec.provider == "openai":
        return _openai(spec)
    return _imported(spec)


def _openai(spec: ModelSpec) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    env = spec.api_key_env or "OPENAI_API_KEY"
    key = os.environ.get(env)
    if not key:
        raise ModelError(
            f"model '{spec.label}' needs an API key: set the environment variable {env}"
        )
    if not spec.name:
        raise ModelError("an openai model needs a name, e.g. 'openai:gpt-4o-mini'")
    return ChatOpenAI(model=spec.name, base_url=spec.base_url, api_key=key, **spec.options)  # type: ignore[arg-type]


def _imported(spec: ModelSpec) -> BaseChatModel:
    path = spec.class_path or ""
    module_name, _, class_name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ModelError(f"cannot import chat model class '{path}': {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, BaseChatModel)):
        raise ModelError(f"'{path}' is not a LangChain BaseChatModel class")
    options = dict(spec.options)
    if spec.name:
        options.setdefault("model", spec.name)
    try:
        model: BaseChatModel = cls(**options)
    except Exception as exc:  # provider constructors raise anything; we name the model
        raise ModelError(f"cannot build '{path}' with {sorted(options)}: {exc}") from exc
    return model


def model_label(model: BaseChatModel, spec: ModelSpec) -> str:
    """What transcripts show as the model: 'simulated' for the simulator, else the spec label."""
    return "simulated" if isinstance(model, SimulatedChatModel) else spec.label
