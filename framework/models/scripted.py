"""A scripted chat model for tests: replays given replies (or raises given errors) in order."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from framework.errors import ModelError
from framework.models.offline import OfflineChatModel

Reply = AIMessage | BaseException | str


class ScriptedChatModel(OfflineChatModel):
    """Replays ``replies`` one per call: a string or AIMessage is returned, an exception raised.

    Every call's input messages are kept in ``calls`` so a test can assert what was sent.
    """

    replies: list[Any] = Field(default_factory=list)
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "staffroom-scripted"

    def reply(self, messages: list[BaseMessage], **kwargs: Any) -> AIMessage:
        """The next scripted reply (raised, if it is an exception); ``messages`` are kept."""
        self.calls.append(list(messages))
        if not self.replies:
            raise ModelError("the scripted model has no replies left")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))
