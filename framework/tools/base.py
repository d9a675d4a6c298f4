"""What a tool is: its argument model, how it is called, and the result a model sees.

Tool failures a model can fix (bad arguments, a path outside the workspace) come back as a
``ToolResult(ok=False)`` that is logged and shown to the model; they are never raised.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from framework.errors import StaffroomError


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool returned: ``ok`` and the text shown to the model."""

    ok: bool
    output: str
    fallback: dict[str, str] | None = None
    """What the tool did instead of what was asked, for people (``what``, ``used``,
    ``reason``): the turn records it as a ``fallback`` event, so a refusal is seen."""


@functools.cache
def _parameters(args_model: type[BaseModel]) -> dict[str, Any]:
    # Building a JSON Schema takes milliseconds and every turn binds its tools again; an
    # argument model never changes, so its schema is built once per process.
    return args_model.model_json_schema()


@dataclass(frozen=True, slots=True)
class Tool:
    """A callable tool with a pydantic argument model (its JSON Schema is sent to the model)."""

    name: str
    description: str
    args_model: type[BaseModel]
    run: Callable[[Any], Awaitable[ToolResult]]

    def schema(self) -> dict[str, Any]:
        """OpenAI-style function schema, accepted by every LangChain ``bind_tools``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _parameters(self.args_model),
            },
        }

    async def call(self, args: dict[str, Any]) -> ToolResult:
        """Validate ``args`` and run; argument and workspace errors become failed results."""
        try:
            parsed = self.args_model.model_validate(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            return ToolResult(False, f"Error: invalid arguments for {self.name}: {problems}")
        try:
            return await self.run(parsed)
        except StaffroomError as exc:
            return ToolResult(False, f"Error: {exc}")
        except OSError as exc:
            return ToolResult(False, f"Error: {self.name} failed: {exc.strerror or exc}")
