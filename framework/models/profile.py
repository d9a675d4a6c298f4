"""What the runtime must know about a model to talk to it well: window, cap, roles, JSON mode.

A :class:`ModelProfile` is resolved once per employee from its :class:`ModelSpec` and the
settings' defaults; prompt budgets, the role layout and structured answers all read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from framework.specs.model_spec import ModelSpec, SystemRole, ToolCalling, is_official_openai

Structured = Literal["json_schema", "json_object", "prompt"]


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """A model's limits and habits (plain data; see the module docstring)."""

    label: str
    context_window: int = 32768
    max_output_tokens: int = 2048
    system_role: SystemRole = "system"
    structured: Structured = "prompt"
    tool_calling: ToolCalling = "native"
    """native, json or auto (see :mod:`framework.models.json_tools`); the offline doubles
    call tools natively, so ``auto`` resolves to ``native`` for them."""
    base_url: str | None = None
    offline: bool = False

    @property
    def where(self) -> str:
        """Where requests go, for error messages: the base URL or the provider's default."""
        if self.base_url:
            return redact_url(self.base_url)
        return "the provider's default endpoint" if not self.offline else "this process"

    @property
    def input_budget(self) -> int:
        """Tokens a prompt may use: the window less the answer's cap and a safety margin.

        The margin covers the chat template's own tokens and the estimate's error (token
        counts are estimated, see :mod:`framework.runtime.prompt_budget`).
        """
        margin = max(32, self.context_window // 20)
        return max(64, self.context_window - self.max_output_tokens - margin)


def redact_url(url: str) -> str:
    """``url`` without a password or query values, fit for messages and logs."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    if parts.username:
        netloc = f"{parts.username}:***@{netloc}" if parts.password else f"***@{netloc}"
    query = "&".join(f"{k}=***" for k, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def limits(spec: ModelSpec, *, context_window: int, max_output_tokens: int) -> tuple[int, int]:
    """``(window, output cap)`` of ``spec``; the given defaults fill what it leaves empty.

    The cap is ``max_output_tokens``, else ``options.max_tokens``, else the default, and never
    more than half the window, so a prompt always has room. What is sent to the server and
    what the prompt budget assumes are the same number.
    """
    window = spec.context_window or context_window
    option = spec.options.get("max_tokens")
    cap = spec.max_output_tokens or (option if isinstance(option, int) else 0) or max_output_tokens
    return window, min(cap, max(16, window // 2))


def profile_for(
    spec: ModelSpec, *, label: str, context_window: int, max_output_tokens: int, offline: bool
) -> ModelProfile:
    """The profile of ``spec``; the given defaults fill what the spec leaves empty."""
    window, cap = limits(spec, context_window=context_window, max_output_tokens=max_output_tokens)
    structured: Structured
    if spec.structured_output != "auto":
        structured = spec.structured_output
    elif offline or spec.provider != "openai":
        structured = "prompt"
    elif is_official_openai(spec.base_url):
        structured = "json_schema"
    else:
        # llama.cpp's server constrains output to a schema given this way; others treat it
        # as plain JSON mode.
        structured = "json_object"
    # The offline doubles emit native tool calls (or are scripted to): auto means native there,
    # so a scripted test's replies are never consumed by a JSON retry it did not ask for.
    tool_calling = "native" if offline and spec.tool_calling == "auto" else spec.tool_calling
    return ModelProfile(
        label=label,
        context_window=window,
        max_output_tokens=cap,
        system_role=spec.system_role,
        structured=structured,
        tool_calling=tool_calling,
        base_url=spec.base_url,
        offline=offline,
    )
