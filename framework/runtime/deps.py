"""What a room's graph nodes need, passed in as LangGraph runtime context (never checkpointed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models.chat_models import BaseChatModel

from framework.extensions.context import EmployeeModel
from framework.extensions.registry import Extensions
from framework.extensions.sink import EventSink
from framework.extensions.tools import RoomTools
from framework.memory.store import MemoryStore
from framework.models.profile import ModelProfile
from framework.phrases import Language
from framework.prompts.environment import PromptRenderer
from framework.runtime.plan import RoomPlan
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import SessionKey
from framework.sessions.workspace import Workspace
from framework.settings import Settings
from framework.sop.service import SopService
from framework.specs.employee import EmployeeCard
from framework.specs.scenario import Scenario, ScenarioSettings


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


@dataclass(frozen=True, slots=True)
class RoomContext:
    """One room's session as its hooks see it (a :class:`HookContext`): narrow on purpose."""

    deps: RoomDeps
    events: EventSink
    """The sink of the moment (a node's, streaming; or the background's, logging only)."""

    @property
    def key(self) -> SessionKey:
        return self.deps.key

    @property
    def log(self) -> JsonlLog:
        return self.deps.log

    @property
    def scenario(self) -> Scenario:
        return self.deps.plan.scenario

    @property
    def scenario_settings(self) -> ScenarioSettings:
        return self.deps.plan.settings

    @property
    def employees(self) -> Mapping[str, EmployeeCard]:
        return self.deps.plan.employees

    @property
    def participants(self) -> list[str]:
        return self.deps.plan.participants

    @property
    def humans(self) -> list[str]:
        return self.deps.plan.humans

    @property
    def language(self) -> Language:
        return self.deps.plan.language

    @property
    def sop_ref(self) -> str | None:
        return self.deps.plan.sop_ref

    @property
    def workspace(self) -> Path:
        return self.deps.workspace.root

    @property
    def renderer(self) -> PromptRenderer:
        return self.deps.renderer

    def model(self, employee: str) -> EmployeeModel:
        settings = self.deps.settings
        return EmployeeModel(
            chat=self.deps.models.chat[employee],
            profile=self.deps.models.profiles[employee],
            retries=settings.model_retries,
            backoff=settings.model_backoff,
        )

    @property
    def legacy_room(self) -> RoomDeps:
        """The whole room, for the deprecated ``HookCall.room`` only."""
        return self.deps
