"""Turn a :class:`ModelSpec` into a LangChain chat model.

``simulated`` is the embedded default (offline, deterministic, labelled). ``openai`` is any
OpenAI-compatible endpoint by URL. ``import`` builds any LangChain ``BaseChatModel`` class by
dotted path, so every provider LangChain supports is one setting away.
"""

from __future__ import annotations

import importlib
import ipaddress
import os
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models.chat_models import BaseChatModel

from framework.errors import ModelError
from framework.models.simulator import SimulatedChatModel
from framework.specs.model_spec import ModelSpec, is_official_openai

ModelFactory = Callable[[ModelSpec, str], BaseChatModel | None]
"""A hook ``(spec, employee_id) -> model``; return None to fall back to :func:`build_model`."""

OFFLINE_PROVIDERS = frozenset({"simulated", "scripted"})


def build_model(
    spec: ModelSpec, *, allow_network: bool = True, max_output_tokens: int | None = None
) -> BaseChatModel:
    """Build the chat model ``spec`` names; raise :class:`ModelError` with the fix if it can't.

    ``max_output_tokens`` caps every answer (OpenAI-compatible endpoints get it in the field
    they read, see :func:`cap_fields`).
    """
    if spec.named is not None:
        raise ModelError(
            f"model name '{spec.named}' was not resolved; resolve it with the project's "
            "ModelRegistry (models.yaml) first"
        )
    local = spec.provider == "openai" and is_loopback(spec)
    if spec.provider not in OFFLINE_PROVIDERS and not allow_network and not local:
        raise ModelError(
            f"model '{spec.label}' needs the network, which these settings forbid "
            "(allow_network=False); use 'simulated', a server on this machine (127.0.0.1), "
            "or inject a model_factory"
        )
    if spec.provider == "simulated":
        return SimulatedChatModel(delay=float(spec.options.get("delay", 0.0)))
    if spec.provider == "scripted":
        raise ModelError(
            "the 'scripted' model has no replies of its own; pass a model_factory that returns "
            "a ScriptedChatModel (see framework.models.scripted)"
        )
    if spec.provider == "openai":
        return _openai(spec, max_output_tokens or spec.max_output_tokens)
    return _imported(spec)


def is_loopback(spec: ModelSpec) -> bool:
    """True when ``spec`` talks to a server on this machine (nothing leaves it)."""
    host = urlsplit(spec.base_url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback  # not a name that starts with "127."
    except ValueError:
        return False


def cap_fields(spec: ModelSpec, cap: int | None) -> dict[str, Any]:
    """ChatOpenAI keyword arguments that carry the output cap in the field the server reads.

    langchain-openai sends ``max_tokens`` as ``max_completion_tokens``, which OpenAI reads and
    llama.cpp's server ignores; ``extra_body`` adds the older ``max_tokens`` field for servers
    that read only that one.
    """
    if cap is None:
        return {}
    field = spec.cap_field
    if field == "auto":
        field = "max_completion_tokens" if is_official_openai(spec.base_url) else "both"
    kwargs: dict[str, Any] = {}
    if field in ("max_completion_tokens", "both"):
        kwargs["max_tokens"] = cap
    if field in ("max_tokens", "both"):
        kwargs["extra_body"] = {"max_tokens": cap}
    return kwargs


def _openai(spec: ModelSpec, cap: int | None) -> BaseChatModel:
    from langchain_openai import ChatOpenAI

    if not spec.name:
        raise ModelError(
            "an openai model needs a name, e.g. 'openai:gpt-4o-mini' or "
            "'openai:gemma-3-270m@http://127.0.0.1:8080/v1'"
        )
    env = spec.key_env
    key = os.environ.get(env) if env else "not-needed"  # local servers take any key
    if not key:
        raise ModelError(
            f"model '{spec.label}' needs an API key: set the environment variable {env}"
        )
    options = dict(spec.options)
    options.pop("max_tokens", None)  # already in ``cap`` (framework.models.profile.limits)
    kwargs = cap_fields(spec, cap)
    extra = {**kwargs.pop("extra_body", {}), **options.pop("extra_body", {})}
    if extra:
        kwargs["extra_body"] = extra
    # Retries are ours (framework.models.calls), so they are counted and reported the same
    # way for every provider.
    kwargs.setdefault("max_retries", 0)
    kwargs.setdefault("timeout", 300.0)
    kwargs.update(options)
    if "http_async_client" not in kwargs:
        # langchain-openai shares one cached async HTTP client per process, bound to the
        # event loop that first used it; a second asyncio.run() (an embedding bot, a test)
        # then fails with "Event loop is closed". Each model gets its own client, closed
        # with the Staffroom that built it (close_model).
        from openai import DefaultAsyncHttpxClient

        kwargs["http_async_client"] = DefaultAsyncHttpxClient(timeout=kwargs["timeout"])
    try:
        return ChatOpenAI(model=spec.name, base_url=spec.base_url, api_key=key, **kwargs)  # type: ignore[arg-type]
    except Exception as exc:  # a bad option: name it, no traceback
        raise ModelError(
            f"cannot build model '{spec.label}' with options {sorted(options)}: {exc}"
        ) from exc


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


async def close_model(model: BaseChatModel) -> None:
    """Release what a built model holds open (its own HTTP connections)."""
    client = getattr(model, "http_async_client", None)
    if client is not None and hasattr(client, "aclose"):
        await client.aclose()


def model_label(model: BaseChatModel, spec: ModelSpec) -> str:
    """What transcripts show as the model: 'simulated' for the simulator, else the spec label."""
    return "simulated" if isinstance(model, SimulatedChatModel) else spec.label
