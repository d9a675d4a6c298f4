"""Specs: the files people write (employee cards, scenarios, SOP cards) as validated objects.

Everything read from ``agents/``, ``scenarios/`` and ``sop_library/`` passes through here and
comes out as a pydantic model, or as an :class:`~framework.errors.InputError` that names the
file, the line, the field and the fix.
"""

from __future__ import annotations

from .builtin_tools import BUILTIN_TOOLS
from .catalog import Catalog, project_root
from .employee import EmployeeCard, Slug, ToolName, load_card
from .json_schema import schemas
from .model_spec import ModelSpec
from .scenario import Announcement, Scenario, ScenarioSettings, load_scenario
from .sop_card import ChangeLogEntry, SopCard, SopLibrary, SopStep, load_sop_card
from .validation import validate_paths
from .yaml_loader import LineMap, SpecModel, did_you_mean, load_yaml_file, validate

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
