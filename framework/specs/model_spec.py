"""Which chat model an employee (or a whole scenario) uses.

A card may write the full mapping or a one-word shorthand::

    model: simulated
    model: openai:gpt-4o-mini
    model: import:langchain_anthropic.ChatAnthropic
    model: {provider: openai, name: qwen-plus, base_url: "https://example.com/v1",
            api_key_env: DASHSCOPE_API_KEY}
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from ._explain import hint
from .yaml_loader import spec_error

Provider = Literal["simulated", "scripted", "openai", "import"]
PROVIDERS: tuple[str, ...] = ("simulated", "scripted", "openai", "import")
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"

_CLASS_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_SHORTHAND = r"^(simulated|scripted|openai|import)(:.+)?$"


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

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if not isinstance(data, str):
            return data
        provider, _, rest = data.strip().partition(":")
        if provider not in PROVIDERS:
            raise spec_error(
                f"unknown model '{data}'{hint(provider, PROVIDERS)}",
                "write simulated, scripted, openai:<model name> or import:<module.Class>",
            )
        if provider == "import":
            return {"provider": provider, "class_path": rest or None}
        return {"provider": provider, "name": rest or None}

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
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
        if self.provider == "openai" and self.api_key_env is None:
            self.api_key_env = DEFAULT_API_KEY_ENV
        return self

    @property
    def label(self) -> str:
        """Short name: ``simulated``, ``openai:gpt-4o-mini``, ``import:pkg.mod.Class``."""
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
