"""Specs: the files people write (employee cards, scenarios, SOP cards) as validated objects.

Everything read from ``agents/``, ``scenarios/`` and ``sop_library/`` passes through here and
comes out as a pydantic model, or as an :class:`~framework.errors.InputError` that names the
file, the line, the field and the fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from framework.lazy import exports

if TYPE_CHECKING:
    from .builtin_tools import BUILTIN_TOOLS
    from .catalog import Catalog, project_root
    from .employee import EmployeeCard, Slug, ToolName, load_card
    from .json_schema import schemas
    from .model_spec import ModelSpec
    from .scenario import Announcement, Scenario, ScenarioSettings, load_scenario
    from .sop_card import ChangeLogEntry, SopCard, SopLibrary, load_sop_card
    from .step import SopStep
    from .validation import validate_paths
    from .yaml_loader import LineMap, SpecModel, did_you_mean, load_yaml_file, validate

# Public name -> its module (the imports above, for type checkers): `import framework.specs`,
# which every submodule import runs, loads no spec model until one is used.
_HOMES: dict[str, str] = {
    "Announcement": "framework.specs.scenario",
    "BUILTIN_TOOLS": "framework.specs.builtin_tools",
    "Catalog": "framework.specs.catalog",
    "ChangeLogEntry": "framework.specs.sop_card",
    "EmployeeCard": "framework.specs.employee",
    "LineMap": "framework.specs.yaml_loader",
    "ModelSpec": "framework.specs.model_spec",
    "Scenario": "framework.specs.scenario",
    "ScenarioSettings": "framework.specs.scenario",
    "Slug": "framework.specs.employee",
    "SopCard": "framework.specs.sop_card",
    "SopLibrary": "framework.specs.sop_card",
    "SopStep": "framework.specs.step",
    "SpecModel": "framework.specs.yaml_loader",
    "ToolName": "framework.specs.employee",
    "did_you_mean": "framework.specs.yaml_loader",
    "load_card": "framework.specs.employee",
    "load_scenario": "framework.specs.scenario",
    "load_sop_card": "framework.specs.sop_card",
    "load_yaml_file": "framework.specs.yaml_loader",
    "project_root": "framework.specs.catalog",
    "schemas": "framework.specs.json_schema",
    "validate": "framework.specs.yaml_loader",
    "validate_paths": "framework.specs.validation",
}

__getattr__, __dir__ = exports(__name__, _HOMES)

__all__ = [
    "BUILTIN_TOOLS",
    "Announcement",
    "Catalog",
    "ChangeLogEntry",
    "EmployeeCard",
    "LineMap",
    "ModelSpec",
    "Scenario",
    "ScenarioSettings",
    "Slug",
    "SopCard",
    "SopLibrary",
    "SopStep",
    "SpecModel",
    "ToolName",
    "did_you_mean",
    "load_card",
    "load_scenario",
    "load_sop_card",
    "load_yaml_file",
    "project_root",
    "schemas",
    "validate",
    "validate_paths",
]
