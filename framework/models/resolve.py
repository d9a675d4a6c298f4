"""Which chat model each employee of a room thinks with, built (or injected) once per room.

Precedence (see ``specs/models_file.py``): ``--model`` / ``$STAFFROOM_MODEL``, then the
scenario's ``settings.model``, then the employee card's ``model``, then
``Settings.default_model``. A name is looked up in the project's ``models.yaml`` (a scenario
file from another project: that project's, when it has one). An embedder's
:data:`~framework.models.factory.ModelFactory` is asked first; what it returns is its own
to close, what is built here is closed by :meth:`ModelResolver.close`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.language_models.chat_models import BaseChatModel

from framework.models.factory import (
    OFFLINE_PROVIDERS,
    ModelFactory,
    build_model,
    close_model,
    model_label,
)
from framework.models.offline import OfflineChatModel
from framework.models.profile import ModelProfile, limits, profile_for
from framework.settings import Settings
from framework.specs.employee import EmployeeCard
from framework.specs.model_spec import ModelSpec
from framework.specs.models_file import MODELS_FILE, ModelRegistry
from framework.specs.project import project_root
from framework.specs.scenario import Scenario

__all__ = ["ModelResolver", "ResolvedModels"]


@dataclass(frozen=True, slots=True)
class ResolvedModels:
    """A room's models: one per employee (and the selector's), with what each can take."""

    chat: dict[str, BaseChatModel]
    profiles: dict[str, ModelProfile]
    """Per employee id (and ``selector`` when the room has one)."""
    selector: BaseChatModel | None = None


class ModelResolver:
    """Resolves and builds the models of a Staffroom's rooms (see the module docstring)."""

    def __init__(
        self, settings: Settings, registry: ModelRegistry, factory: ModelFactory | None = None
    ) -> None:
        """``registry``: the project's ``models.yaml``; ``factory``: the embedder's, if any."""
        self.settings = settings
        self.registry = registry
        self._factory = factory
        self._owned: list[BaseChatModel] = []
        """Models built here (and closed here); injected ones are their owner's."""

    def for_room(self, scenario: Scenario, employees: Mapping[str, EmployeeCard]) -> ResolvedModels:
        """The models of a room running ``scenario`` with ``employees`` (id -> card)."""
        registry = self._registry_for(scenario)
        chat: dict[str, BaseChatModel] = {}
        profiles: dict[str, ModelProfile] = {}
        for eid, card in employees.items():
            spec, where = self._spec_for(scenario, card)
            chat[eid], profiles[eid] = self._model(registry.resolve(spec, where=where), eid)
        selector_spec = scenario.settings.selector_model
        selector: BaseChatModel | None = None
        if selector_spec is None and scenario.settings.selector == "model":
            selector_spec = self.settings.model_override or self.settings.default_model
        if selector_spec is not None:
            where = f"{scenario.source}: settings.selector_model"
            selector, profiles["selector"] = self._model(
                registry.resolve(selector_spec, where=where), "selector"
            )
        return ResolvedModels(chat, profiles, selector)

    async def close(self) -> None:
        """Close the models built here (their HTTP connections)."""
        for model in self._owned:
            await close_model(model)

    def _spec_for(self, scenario: Scenario, card: EmployeeCard) -> tuple[ModelSpec, str]:
        """The model an employee uses, and who named it (precedence: see models_file)."""
        if self.settings.model_override is not None:
            return self.settings.model_override, "--model / STAFFROOM_MODEL"
        if scenario.settings.model is not None:
            return (
                scenario.settings.model,
                f"{scenario.source}:{scenario.line_of('settings', 'model')}",
            )
        if card.model is not None:
            return card.model, f"{card.source}:{card.line_of('model')}"
        return self.settings.default_model, "Settings.default_model"

    def _registry_for(self, scenario: Scenario) -> ModelRegistry:
        # A scenario file from another project uses that project's models.yaml when it has one.
        if scenario.source.is_file():
            local = project_root(scenario.source) / MODELS_FILE
            if local.is_file() and local.resolve() != (self.registry.source or local).resolve():
                return ModelRegistry.load(local)
        return self.registry

    def _model(self, spec: ModelSpec, employee: str) -> tuple[BaseChatModel, ModelProfile]:
        settings = self.settings
        model: BaseChatModel | None = None
        if self._factory is not None:
            model = self._factory(spec, employee)
        if model is None:
            _, cap = limits(
                spec,
                context_window=settings.context_window,
                max_output_tokens=settings.max_output_tokens,
            )
            model = build_model(spec, allow_network=settings.allow_network, max_output_tokens=cap)
            self._owned.append(model)  # an injected model is its embedder's to close
        profile = profile_for(
            spec,
            label=model_label(model, spec),
            context_window=settings.context_window,
            max_output_tokens=settings.max_output_tokens,
            offline=spec.provider in OFFLINE_PROVIDERS or isinstance(model, OfflineChatModel),
        )
        return model, profile
