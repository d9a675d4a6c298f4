"""What a hook is given besides its event: one session, narrowly.

A hook sees the session it runs in (its key, its log, where its events go), the scenario's
settings, who is in the room and the model each employee talks through; not the room's
graph, checkpoints or other stores. A feature that needs its own store (SOPs, memory,
knowledge) captures it when it registers (``register(extensions, store)``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from langchain_core.language_models.chat_models import BaseChatModel

from framework.extensions.sink import EventSink
from framework.models.profile import ModelProfile
from framework.phrases import Language
from framework.prompts.environment import PromptRenderer
from framework.sessions.jsonl_log import JsonlLog
from framework.sessions.keys import SessionKey
from framework.specs.employee import EmployeeCard
from framework.specs.scenario import Scenario, ScenarioSettings


@dataclass(frozen=True, slots=True)
class EmployeeModel:
    """The chat model an employee talks through, and how to call it."""

    chat: BaseChatModel
    profile: ModelProfile
    """Label, window, output cap, roles, JSON mode."""
    retries: int
    """``Settings.model_retries``: attempts after a failed call."""
    backoff: float
    """``Settings.model_backoff``: seconds before the first retry."""

    @property
    def offline(self) -> bool:
        """True for the offline simulator (a test double: rules stand in for the model)."""
        return self.profile.offline


class HookContext(Protocol):
    """One session, as a hook sees it."""

    @property
    def key(self) -> SessionKey:
        """The session (``room:...`` or ``dm:...``)."""
        ...

    @property
    def log(self) -> JsonlLog:
        """The session's log (read it; write through :attr:`events`)."""
        ...

    @property
    def events(self) -> EventSink:
        """Where the hook's events go (logged, and streamed when the point streams)."""
        ...

    @property
    def scenario(self) -> Scenario:
        """The room's scenario (a DM's is built with default settings)."""
        ...

    @property
    def scenario_settings(self) -> ScenarioSettings:
        """The room's scenario settings (``settings:`` of its scenario file), not the
        process-wide runtime ``Settings``."""
        ...

    @property
    def employees(self) -> Mapping[str, EmployeeCard]:
        """The room's employees by id (its roster)."""
        ...

    @property
    def participants(self) -> list[str]:
        """The employees in the session, in the scenario's order."""
        ...

    @property
    def humans(self) -> list[str]:
        """The people of the room (a DM: its user)."""
        ...

    @property
    def language(self) -> Language:
        """The language of the room's shared text."""
        ...

    @property
    def sop_ref(self) -> str | None:
        """``id@version`` of the SOP the room runs (None: a DM, or a room without one)."""
        ...

    @property
    def workspace(self) -> Path:
        """The session's shared workspace folder."""
        ...

    @property
    def renderer(self) -> PromptRenderer:
        """Renders the packaged (and the project's) prompt templates."""
        ...

    def model(self, employee: str) -> EmployeeModel:
        """The model ``employee`` talks through."""
        ...
