"""What the offline doubles share: one answer a call, and tools bound the way real providers
bind them."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import LanguageModelInput
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool


class OfflineChatModel(BaseChatModel):
    """Base of the simulator and the scripted model: no network, tools bound as schemas, and
    each call answered by :meth:`reply`."""

    @abstractmethod
    def reply(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        """The double's answer to ``messages`` (``kwargs`` hold what was bound, e.g. ``tools``)."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages, **kwargs))])

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as OpenAI-style schemas, like real providers do (the double reads them)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)
