"""Which chat model an employee (or a whole scenario) uses.

A card may write the full mapping or a one-word shorthand::

    model: simulated
    model: openai:gpt-4o-mini
    model: import:langchain_anthropic.ChatAnthropic
    model: openai:gemma-3-270m@http://127.0.0.1:8080/v1    # name@base_url
    model: local                                           # a name from the project's models.yaml
    model: {provider: openai, name: qwen-plus, base_url: "https://example.com/v1",
            api_key_env: DASHSCOPE_API_KEY, context_window: 32768, max_output_tokens: 1024}

Budgets are in tokens: ``context_window`` is what the server can hold in all,
``max_output_tokens`` the cap on one answer (sent in the field the server reads, see
``cap_field``). ``system_role`` says how instructions reach a model whose chat template has no
system role (Gemma's): ``fold`` puts them into the first user message, ``both`` does both.
``tool_calling`` says how a tool call is asked for: ``native`` (the API's tool calls), ``json``
(a JSON answer naming the tool, for models that never emit tool calls) or ``auto`` (native,
then JSON once the model answers a step that must write a file without calling any tool).
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from ._explain import hint
from .yaml_loader import spec_error

Provider = Literal["simulated", "scripted", "openai", "import"]
SystemRole = Literal["system", "fold", "both"]
StructuredMode = Literal["auto", "json_schema", "json_object", "prompt"]
CapField = Literal["auto", "max_tokens", "max_completion_tokens", "both"]
ToolCalling = Literal["native", "json", "auto"]
PROVIDERS: tuple[str, ...] = ("simulated", "scripted", "openai", "import")
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
OFFICIAL_OPENAI = "api.openai.com"

_CLASS_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_SHORTHAND = r"^((simulated|scripted|openai|import)(:.+)?|[A-Za-z0-9_.-]+)$"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def is_official_openai(base_url: str | None) -> bool:
    """True for OpenAI's own endpoint (no base URL, or a host under api.openai.com)."""
    return base_url is None or OFFICIAL_OPENAI in (urlsplit(base_url).hostname or "")


class ModelSpec(BaseModel):
    """A chat model by provider; ``label`` names it in transcripts and events."""

    model_config = ConfigDict(extra="forbid")

    provider: Provider = Field(
        default="simulated",
        description="simulated (offline, deterministic), scripted (tests), openai "
        "(any OpenAI-compatible endpoint) or import (any LangChain chat model class)",
    )
    name: str | None = Field(default=None, description="model name", examples=["gpt-4o-mini"])
    base_url: str | None = Field(
        default=None,
        description="OpenAI-compatible endpoint URL (provider openai)",
        examples=["https://api.openai.com/v1"],
    )
    api_key_env: str | None = Field(
        default=None,
        description=f"environment variable holding the API key ({DEFAULT_API_KEY_ENV} for openai)",
    )
    class_path: str | None = Field(
        default=None,
        description="provider import: dotted path of a LangChain BaseChatModel class",
        examples=["langchain_anthropic.ChatAnthropic"],
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="keyword arguments for the model (simulated: e.g. {delay: 0.2})",
    )
    named: str | None = Field(
        default=None,
        description="a model named in the project's models.yaml; the other fields set here "
        "override the named model's",
        examples=["local"],
    )
    context_window: int | None = Field(
        default=None,
        gt=0,
        le=100_000_000,  # a hundred times today's largest windows: anything above is a typo
        description="tokens the model can hold (prompt + answer); empty = Settings.context_window",
        examples=[4096],
    )
    max_output_tokens: int | None = Field(
        default=None,
        gt=0,
        le=10_000_000,
        description="cap on one answer, in tokens; empty = Settings.max_output_tokens",
        examples=[512],
    )
    system_role: SystemRole = Field(
        default="system",
        description="how instructions reach the model: system (a system message), fold (into "
        "the first user message, for chat templates without a system role, e.g. Gemma) or both",
    )
    structured_output: StructuredMode = Field(
        default="auto",
        description="how JSON answers are asked for: json_schema (OpenAI response_format), "
        "json_object (with a schema, as llama.cpp reads it), prompt (schema and examples in "
        "the prompt only); auto picks by endpoint",
    )
    tool_calling: ToolCalling = Field(
        default="auto",
        description="how tool calls are asked for: native (the API's tool calls), json (a "
        "tool call asked for as a JSON answer, schema-constrained where the server supports "
        "it, for models without tool calls) or auto (native; a model that answers a step that "
        "produces files without any tool call is asked again with json)",
    )
    cap_field: CapField = Field(
        default="auto",
        description="which request field carries max_output_tokens: auto sends "
        "max_completion_tokens to api.openai.com and both fields elsewhere",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        text = data.strip()
        provider, colon, rest = text.partition(":")
        if not colon and provider not in PROVIDERS:
            if _NAME.match(text):
                return {"named": text}  # resolved against models.yaml by the catalog
            raise spec_error(
                f"unknown model '{data}'{hint(provider, PROVIDERS)}",
                "write simulated, openai:<model name>[@<base url>], import:<module.Class> "
                "or the name of a model in models.yaml",
            )
        if provider not in PROVIDERS:
            raise spec_error(
                f"unknown model provider '{provider}'{hint(provider, PROVIDERS)}",
                "write simulated, openai:<model name>[@<base url>], import:<module.Class> "
                "or the name of a model in models.yaml",
            )
        if provider == "import":
            return {"provider": provider, "class_path": rest or None}
        name, at, url = rest.partition("@")
        if at:
            return {"provider": provider, "name": name or None, "base_url": url or None}
        return {"provider": provider, "name": rest or None}

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if self.named is not None:
            return self  # checked when the name is resolved
        if "max_tokens" in self.options and not (
            isinstance(self.options["max_tokens"], int) and self.options["max_tokens"] > 0
        ):
            raise spec_error(
                "options.max_tokens must be a whole number > 0, "
                f"got {self.options['max_tokens']!r}",
                "write max_output_tokens: N (the cap on one answer) instead",
                at=("options", "max_tokens"),
            )
        taken = sorted({"model", "base_url", "api_key"} & set(self.options))
        if self.provider == "openai" and taken:
            raise spec_error(
                f"options may not set {', '.join(taken)}: they have fields of their own",
                "use name, base_url and api_key_env (the variable holding the key)",
                at=("options",),
            )
        if self.provider == "import":
            if not self.class_path or not _CLASS_PATH.match(self.class_path):
                raise spec_error(
                    f"provider 'import' needs a class path like package.module.Class, "
                    f"got {self.class_path!r}",
                    "write e.g. `model: import:langchain_anthropic.ChatAnthropic`",
                    at=("class_path",),
                )
        elif self.class_path is not None:
            raise spec_error(
                f"class_path is only used with provider 'import' (this one is '{self.provider}')",
                "remove class_path, or set `provider: import`",
                at=("class_path",),
            )
        return self

    def merged_over(self, base: ModelSpec) -> ModelSpec:
        """``base`` (a named model) with the fields this spec sets explicitly on top.

        Options merge key by key; the result is validated like any spec.
        """
        update = {k: getattr(self, k) for k in self.model_fields_set if k != "named"}
        if "options" in update:
            update["options"] = {**base.options, **self.options}
        data = {**base.model_dump(exclude_unset=True), **update}
        return ModelSpec.model_validate(data)

    @property
    def key_env(self) -> str | None:
        """The environment variable holding the API key, if one is needed.

        An explicit ``api_key_env`` is always required; without one, OpenAI's own endpoint
        reads ``OPENAI_API_KEY`` and a local server (``base_url`` set) needs no key.
        """
        if self.api_key_env:
            return self.api_key_env
        if self.provider == "openai" and is_official_openai(self.base_url):
            return DEFAULT_API_KEY_ENV
        return None

    @property
    def label(self) -> str:
        """Short name: ``simulated``, ``openai:gpt-4o-mini``, ``import:pkg.mod.Class``."""
        if self.named is not None:
            return self.named
        if self.provider == "import":
            return f"import:{self.class_path}"
        return f"{self.provider}:{self.name}" if self.name else self.provider

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # The shorthand string is accepted by the before-validator, which the schema cannot
        # see; say so, or editors would flag `model: simulated` as wrong.
        schema = handler.resolve_ref_schema(handler(core_schema))
        mapping = {k: v for k, v in schema.items() if k not in {"title", "description"}}
        return {
            "title": "ModelSpec",
            "description": "a model: shorthand string or mapping",
            "anyOf": [
                {
                    "type": "string",
                    "pattern": _SHORTHAND,
                    "examples": ["simulated", "openai:gpt-4o-mini"],
                },
                mapping,
            ],
        }
