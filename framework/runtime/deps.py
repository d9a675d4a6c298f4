"""What a room's graph nodes need, passed in as LangGraph runtime context (never checkpointed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel

from framework.memory.store import MemoryStore
from framework.models.profile import ModelProfile
from framework.prompts.environment import PromptRenderer
from framework.runtime.plan import RoomPlan
from framework.sessions.events import Event, EventKind, make_event
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import SessionKey
from framework.sessions.workspace import Workspace
from framework.settings import Settings
from framework.sop.service import SopService
from framework.tools.base import Tool


@dataclass(slots=True)
class RoomDeps:
    """A room's collaborators: plan, history, workspace, tools and one model per employee."""

    key: SessionKey
    plan: RoomPlan
    log: JsonlLog
    workspace: Workspace
    tools: dict[str, Tool]
    models: dict[str, BaseChatModel]
    model_labels: dict[str, str]
    profiles: dict[str, ModelProfile]
    """Per employee id (and ``selector``): window, output cap, roles, JSON mode."""
    selector_model: BaseChatModel | None
    renderer: PromptRenderer
    settings: Settings
    memory: MemoryStore
    sops: SopService

    def emit(
        self,
        writer: Callable[[Any], None],
        kind: EventKind,
        author: str,
        content: Any,
        *,
        id: str,
        meta: dict[str, Any] | None = None,
        text_offsets: list[int] | None = None,
    ) -> Event:
        """Append an event to the log and, when it is new, stream it to the caller.

        Ids are deterministic per node run, so a node re-run after a crash re-appends the
        same ids, which the log skips, and nothing is shown or stored twice.
        """
        event = make_event(
            str(self.key), kind, author, content, id=id, meta=meta, text_offsets=text_offsets
        )
        if self.log.append(event):
            writer(event)
        return event
