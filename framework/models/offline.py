"""What the offline doubles share: binding tools the way real providers do."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool


class OfflineChatModel(BaseChatModel):
    """Base of the simulator and the scripted model: no network, tools bound as schemas."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI-style schemas, like real providers do (the double reads them)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)
