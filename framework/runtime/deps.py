"""What a room's graph nodes need, passed in as LangGraph runtime context (never checkpointed)."""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.language_models.chat_models import BaseChatModel

from framework.memory.store import MemoryStore
from framework.models.profile import ModelProfile
from framework.prompts.environment import PromptRenderer
from framework.runtime.extensions import Extensions
from framework.runtime.plan import RoomPlan
from framework.runtime.room_tools import RoomTools
from framework.runtime.sink import EventSink
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import SessionKey
from framework.sessions.workspace import Workspace
from framework.settings import Settings
from framework.sop.service import SopService


@dataclass(frozen=True, slots=True)
class RoomModels:
    """One chat model per employee (and the selector's), with what each can take."""

    chat: dict[str, BaseChatModel]
    profiles: dict[str, ModelProfile]
    """Per employee id (and ``selector``): label, window, output cap, roles, JSON mode."""
    selector: BaseChatModel | None = None
    json_tools: set[str] = field(default_factory=set)
    """Labels of models (``tool_calling: auto``) that answered a producing step without a
    tool call: later producing turns on them in this room ask for tool calls as JSON."""

    def label(self, employee: str) -> str:
        """The model's label as shown to people (``simulated``, ``openai:gpt-4o-mini``)."""
        return self.profiles[employee].label


@dataclass(slots=True)
class RunControl:
    """Requests to a running room from outside its run (the one mutable part of its deps)."""

    interrupt: bool = False
    """Stop the run at its next safe point, between turns (see ``Room.interrupt``)."""


@dataclass(frozen=True, slots=True)
class RoomDeps:
    """A room's collaborators: its plan, history, workspace, tools, models and hooks."""

    key: SessionKey
    plan: RoomPlan
    log: JsonlLog
    workspace: Workspace
    tools: RoomTools
    models: RoomModels
    extensions: Extensions
    """Registered hooks and prompt blocks (shared by every room of a Staffroom)."""
    renderer: PromptRenderer
    settings: Settings
    memory: MemoryStore
    sops: SopService
    control: RunControl = field(default_factory=RunControl)

    def sink(self) -> EventSink:
        """An event sink for this session that streams nowhere (bind a node's writer to it)."""
        return EventSink(str(self.key), self.log)
